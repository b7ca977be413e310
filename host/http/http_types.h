// http_types.h — plain HTTP request/response values shared by the host's stages.
//
// The network layer (host/http_server.*) converts Beast messages to and from these; every other
// stage (authentication, idempotency gate, router, problem rendering) is a function
// HttpRequest → HttpResponse that can be tested without a socket. These are plain values: no
// sockets, no Beast types, copyable. Not thread-safe for concurrent mutation (like any value).
#ifndef CLAWGUARD_HOST_HTTP_HTTP_TYPES_H_
#define CLAWGUARD_HOST_HTTP_HTTP_TYPES_H_

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clawguard::host {

// AsciiCaseEqual compares two header names ignoring ASCII case (RFC 9110 §5.1).
inline bool AsciiCaseEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// HttpHeaders is an ordered list of (name, value) fields. Lookup ignores ASCII case; order and
// the original spelling are kept (repeated names stay separate entries).
class HttpHeaders {
 public:
  using Field = std::pair<std::string, std::string>;

  HttpHeaders() = default;
  HttpHeaders(std::initializer_list<Field> fields) : fields_(fields) {}

  // Add appends a field (never replaces).
  void Add(std::string name, std::string value) {
    fields_.emplace_back(std::move(name), std::move(value));
  }
  // Set replaces every field named |name| by one field (appended if absent).
  void Set(std::string_view name, std::string value) {
    Remove(name);
    fields_.emplace_back(std::string(name), std::move(value));
  }
  // Remove drops every field named |name|.
  void Remove(std::string_view name) {
    std::erase_if(fields_, [&](const Field& f) { return AsciiCaseEqual(f.first, name); });
  }
  // Get returns the value of the first field named |name|, or nullopt.
  std::optional<std::string_view> Get(std::string_view name) const {
    for (const auto& f : fields_) {
      if (AsciiCaseEqual(f.first, name)) return std::string_view(f.second);
    }
    return std::nullopt;
  }
  // Count returns how many fields are named |name|.
  std::size_t Count(std::string_view name) const {
    std::size_t n = 0;
    for (const auto& f : fields_) n += AsciiCaseEqual(f.first, name) ? 1 : 0;
    return n;
  }
  bool Has(std::string_view name) const { return Get(name).has_value(); }

  // ByteSize is the wire size estimate "name: value\r\n" summed over fields (for size limits).
  std::size_t ByteSize() const {
    std::size_t n = 0;
    for (const auto& f : fields_) n += f.first.size() + f.second.size() + 4;
    return n;
  }

  const std::vector<Field>& fields() const { return fields_; }
  std::size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }
  auto begin() const { return fields_.begin(); }
  auto end() const { return fields_.end(); }

 private:
  std::vector<Field> fields_;
};

// HttpRequest is one received request: method ("POST"), target as received
// ("/webhooks/acme-orders/order.created"), headers and the raw body bytes.
struct HttpRequest {
  std::string method;
  std::string target;
  HttpHeaders headers;
  std::string body;
};

// HttpResponse is one answer: status code, headers (Content-Type, Retry-After, ...) and body.
struct HttpResponse {
  int status = 200;
  HttpHeaders headers;
  std::string body;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_HTTP_HTTP_TYPES_H_
