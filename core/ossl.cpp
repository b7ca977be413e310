// ossl.cpp — OpenSSL error-queue draining.
#include "clawguard/ossl.h"

#include <openssl/err.h>

namespace clawguard::ossl {

std::string GetSslErrors() {
  std::string out;
  unsigned long code = 0;
  while ((code = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

}  // namespace clawguard::ossl
