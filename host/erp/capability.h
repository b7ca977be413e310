// capability.h — the manifest's ERP capabilities, compiled once, matched on the exact request.
//
// A capability is "METHOD /seg/{name}/seg" (as IsValidErpCapability accepts: literal segments of
// [A-Za-z0-9_~.-]+ other than "." and "..", or "{name}"). Match() is applied to the exact method
// and path that would be sent (ARCHITECTURE.md step 5):
//   - the method must equal the template's, byte for byte (no case folding);
//   - the path must start with '/', contain no '%', '?', '#', no empty segment ('//' or a
//     trailing '/') and no "." or ".." segment — such a path never matches, whatever the
//     template: the ERP's normalisation must not be able to widen a capability;
//   - a literal segment matches itself; "{name}" matches one segment of [A-Za-z0-9_~-]+ (no '.').
// Immutable after Create; thread-safe.
#ifndef CLAWGUARD_HOST_ERP_CAPABILITY_H_
#define CLAWGUARD_HOST_ERP_CAPABILITY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clawguard/error.h"

namespace clawguard::host {

class CapabilitySet {
 public:
  // Create compiles |capabilities|; kManifestInvalid naming the first bad one.
  static Result<CapabilitySet> Create(const std::vector<std::string>& capabilities);

  // Match returns the capability string that allows (method, path) — the ERP endpoint name for
  // metrics and breakers — or nullopt (the call is refused: CG_DENIED).
  std::optional<std::string_view> Match(std::string_view method, std::string_view path) const;

  size_t size() const { return templates_.size(); }

 private:
  struct Segment {
    bool is_param = false;
    std::string literal;
  };
  struct Template {
    std::string text;  // "POST /orders/{id}/fulfil"
    std::string method;
    std::vector<Segment> segments;
  };
  explicit CapabilitySet(std::vector<Template> templates) : templates_(std::move(templates)) {}

  std::vector<Template> templates_;
};

// IsSafeErpPath is true when |path| passes the path rules above (used before matching, and
// useful on its own for messages).
bool IsSafeErpPath(std::string_view path);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_ERP_CAPABILITY_H_
