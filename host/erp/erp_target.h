// erp_target.h — the parts of the ERP client that need no Boost: the parsed erp.base_url, the
// Status a failed call carries (ErpFailure, erp_client.h), and the control-character check every
// method, path, header and credential passes.
#ifndef CLAWGUARD_HOST_ERP_ERP_TARGET_H_
#define CLAWGUARD_HOST_ERP_ERP_TARGET_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "clawguard/error.h"
#include "host/erp/erp_client.h"

namespace clawguard::host {

// ErpTarget is erp.base_url taken apart.
struct ErpTarget {
  bool tls = false;
  std::string host;  // without brackets
  uint16_t port = 0;
  std::string prefix;  // "" or "/prefix" (no trailing slash)
  std::string host_header;
};

// ParseErpBaseUrl reads http(s)://host[:port][/prefix] (IPv6 literals in brackets); no query,
// fragment or userinfo. kConfigInvalid names what is wrong.
Result<ErpTarget> ParseErpBaseUrl(std::string_view url);

// ErpFailureStatus is the Status of a call that got no answer: kInternal with the message
// "erp_<kind>: <method> <path>: <what>", which ErpFailureOf reads back.
Status ErpFailureStatus(ErpFailure kind, std::string_view method, std::string_view path,
                        std::string_view what);

// HasControlChar is true when |s| holds a byte below 0x20 or DEL.
bool HasControlChar(std::string_view s);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_ERP_TARGET_H_
