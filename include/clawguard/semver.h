// semver.h — SemVer 2.0 versions (build metadata refused: it would dodge the ledger).
#ifndef CLAWGUARD_SEMVER_H_
#define CLAWGUARD_SEMVER_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clawguard {

struct SemVer {
  unsigned long long major = 0, minor = 0, patch = 0;
  std::vector<std::string> prerelease;  // dot-separated identifiers
};

// ParseSemVer parses MAJOR.MINOR.PATCH[-PRERELEASE]; nullopt for anything else, including
// "+build" metadata, leading zeros and empty identifiers.
std::optional<SemVer> ParseSemVer(std::string_view text);
// CompareSemVer orders by SemVer 2.0 precedence: <0, 0 or >0.
int CompareSemVer(const SemVer& a, const SemVer& b);

}  // namespace clawguard

#endif  // CLAWGUARD_SEMVER_H_
