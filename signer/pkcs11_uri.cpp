// pkcs11_uri.cpp — strict RFC 7512 parsing (see pkcs11_uri.h for the deliberate deviations).
#include "signer/pkcs11_uri.h"

#include <cctype>
#include <vector>

namespace clawguard::signer {
namespace {

constexpr std::string_view kScheme = "pkcs11:";

Status Invalid(std::string message) {
  return Status(
      Reason::kKeyUriInvalid,
      std::move(message) +
          " (expected pkcs11:token=TOKEN;object=LABEL, e.g. from `clawguard keys generate`)");
}

bool IsUnreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
}

// RFC 7512 pk11-pchar (path values) and pk11-qchar (query values), besides unreserved and '%'.
bool IsPathChar(unsigned char c) {
  return IsUnreserved(c) ||
         std::string_view(":[]@!$'()*+,=&").find(static_cast<char>(c)) != std::string_view::npos;
}
bool IsQueryChar(unsigned char c) {
  return IsUnreserved(c) ||
         std::string_view(":[]@!$'()*+,=/?|;").find(static_cast<char>(c)) != std::string_view::npos;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecode(std::string_view name, std::string_view value, bool query) {
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c == '%') {
      if (i + 2 >= value.size()) {
        return Invalid("attribute '" + std::string(name) +
                       "': '%' must be followed by two hex digits");
      }
      const int hi = HexValue(value[i + 1]);
      const int lo = HexValue(value[i + 2]);
      if (hi < 0 || lo < 0) {
        return Invalid("attribute '" + std::string(name) +
                       "': '%' must be followed by two hex digits");
      }
      const char decoded = static_cast<char>(hi * 16 + lo);
      // A NUL cannot be part of a label (it would end it early in C APIs); CKA_ID is binary.
      if (decoded == '\0' && name != "id")
        return Invalid("attribute '" + std::string(name) + "' contains %00");
      out.push_back(decoded);
      i += 2;
      continue;
    }
    if (!(query ? IsQueryChar(c) : IsPathChar(c))) {
      char hex[4];
      static constexpr char kDigits[] = "0123456789ABCDEF";
      hex[0] = '%';
      hex[1] = kDigits[c >> 4];
      hex[2] = kDigits[c & 0xf];
      hex[3] = '\0';
      return Invalid("attribute '" + std::string(name) + "': character at offset " +
                     std::to_string(i) + " must be percent-encoded as " + hex);
    }
    out.push_back(static_cast<char>(c));
  }
  return out;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t pos = s.find(sep, start);
    parts.push_back(
        s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

}  // namespace

Result<Pkcs11Uri> ParsePkcs11Uri(std::string_view uri) {
  if (uri.size() < kScheme.size() || uri.substr(0, kScheme.size()) != kScheme) {
    return Invalid("a key URI must start with 'pkcs11:'");
  }
  std::string_view rest = uri.substr(kScheme.size());
  std::string_view path = rest, query;
  if (const size_t q = rest.find('?'); q != std::string_view::npos) {
    path = rest.substr(0, q);
    query = rest.substr(q + 1);
  }
  if (const size_t f = rest.find('#'); f != std::string_view::npos)
    return Invalid("a key URI has no fragment ('#')");

  if (!query.empty() || rest.find('?') != std::string_view::npos) {
    for (std::string_view attr : Split(query, '&')) {
      const std::string_view name = attr.substr(0, attr.find('='));
      if (name == "pin-value" || name == "pin-source") {
        return Invalid(
            "the URI carries '" + std::string(name) +
            "': a PIN never goes into a key URI; pass it with --pin-source env:VAR|file:PATH|fd:N");
      }
      if (name == "module-path" || name == "module-name") {
        return Invalid("the URI carries '" + std::string(name) +
                       "': choose the module with --module or CLAWGUARD_PKCS11_MODULE instead");
      }
      return Invalid("query attribute '" + std::string(name) + "' is not supported");
    }
  }

  Pkcs11Uri out;
  std::string token;
  bool has_token = false, has_type = false;
  for (std::string_view attr : Split(path, ';')) {
    const size_t eq = attr.find('=');
    if (attr.empty() || eq == std::string_view::npos || eq == 0) {
      return Invalid("path attribute '" + std::string(attr) + "' is not of the form name=value");
    }
    const std::string name(attr.substr(0, eq));
    if (name == "pin-value" || name == "pin-source" || name == "module-path" ||
        name == "module-name") {
      return Invalid("the URI carries '" + name +
                     "', which is refused (PIN: --pin-source; module: --module)");
    }
    CLAWGUARD_ASSIGN_OR_RETURN(std::string value,
                               PercentDecode(name, attr.substr(eq + 1), /*query=*/false));
    if (value.empty()) return Invalid("attribute '" + name + "' is empty");
    auto once = [&](bool seen) -> Status {
      return seen ? Invalid("attribute '" + name + "' appears twice") : Status::Ok();
    };
    if (name == "token") {
      CLAWGUARD_RETURN_IF_ERROR(once(has_token));
      has_token = true;
      out.token = std::move(value);
    } else if (name == "object") {
      CLAWGUARD_RETURN_IF_ERROR(once(out.object.has_value()));
      out.object = std::move(value);
    } else if (name == "id") {
      CLAWGUARD_RETURN_IF_ERROR(once(out.id.has_value()));
      out.id = std::move(value);
    } else if (name == "type") {
      CLAWGUARD_RETURN_IF_ERROR(once(has_type));
      has_type = true;
      if (value != "private") {
        return Invalid("type=" + value +
                       " does not name a signing key; use type=private or leave it out");
      }
    } else {
      return Invalid("attribute '" + name +
                     "' is not supported (supported: token, object, id, type)");
    }
  }
  if (!has_token) return Invalid("the URI has no token= attribute");
  if (!out.object && !out.id)
    return Invalid("the URI names no key: give object= (the key label) or id=");
  return out;
}

std::string PercentEncode(std::string_view raw) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : raw) {
    const auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 0xf]);
    }
  }
  return out;
}

std::string FormatPkcs11Uri(const Pkcs11Uri& uri) {
  std::string out = "pkcs11:token=" + PercentEncode(uri.token);
  if (uri.object) out += ";object=" + PercentEncode(*uri.object);
  if (uri.id) out += ";id=" + PercentEncode(*uri.id);
  out += ";type=private";
  return out;
}

}  // namespace clawguard::signer
