// prom_text.cpp — strict Prometheus text-format parser for tests (see prom_text.h).
#include "support/prom_text.h"

#include <cmath>
#include <cstdlib>
#include <set>

namespace clawguard::host::testing {
namespace {

bool IsNameChar(char c, bool first, bool colon) {
  const bool alpha =
      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

// ReadName consumes a metric (colon=true) or label name at |pos|.
std::string ReadName(std::string_view line, std::size_t& pos, bool colon) {
  const std::size_t start = pos;
  while (pos < line.size() && IsNameChar(line[pos], pos == start, colon)) ++pos;
  return std::string(line.substr(start, pos - start));
}

std::optional<double> ParseValue(std::string_view s) {
  if (s == "+Inf" || s == "Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  if (s == "NaN") return NAN;
  if (s.empty()) return std::nullopt;
  std::string copy(s);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  return v;
}

std::string BaseFamily(const std::string& name, const std::map<std::string, PromFamily>& families,
                       std::string* suffix) {
  for (const char* s : {"_bucket", "_sum", "_count"}) {
    const std::string_view sv(s);
    if (name.size() > sv.size() && name.ends_with(sv)) {
      const std::string base = name.substr(0, name.size() - sv.size());
      auto it = families.find(base);
      if (it != families.end() && it->second.type == "histogram") {
        *suffix = s;
        return base;
      }
    }
  }
  suffix->clear();
  return name;
}

}  // namespace

std::optional<double> PromText::Value(std::string_view name,
                                      const std::map<std::string, std::string>& labels) const {
  for (const auto& s : samples) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  return std::nullopt;
}

std::size_t PromText::SeriesCount(std::string_view name) const {
  std::size_t n = 0;
  for (const auto& s : samples) n += s.name == name ? 1 : 0;
  return n;
}

std::optional<PromText> ParsePromText(std::string_view text, std::string* error) {
  PromText out;
  std::set<std::string> helped, seen_series, sampled_families;
  std::map<std::string, std::pair<double, bool>>
      last_bucket;  // series (without le) → (value, saw +Inf)
  int line_no = 0;
  const auto fail = [&](const std::string& why) -> std::optional<PromText> {
    *error = "line " + std::to_string(line_no) + ": " + why;
    return std::nullopt;
  };
  if (text.empty() || text.back() != '\n') return fail("the text must end with a newline");
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    const std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    ++line_no;
    if (line.empty()) return fail("empty line");
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const bool help = line[2] == 'H';
      std::size_t pos = 7;
      const std::string name = ReadName(line, pos, true);
      if (name.empty() || pos >= line.size() || line[pos] != ' ') return fail("bad HELP/TYPE line");
      const std::string rest(line.substr(pos + 1));
      if (sampled_families.count(name) != 0) return fail("HELP/TYPE after samples of " + name);
      if (help) {
        if (!helped.insert(name).second) return fail("second HELP for " + name);
        out.families[name].help = rest;
      } else {
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        if (kTypes.count(rest) == 0) return fail("unknown type '" + rest + "'");
        if (!out.families[name].type.empty()) return fail("second TYPE for " + name);
        out.families[name].type = rest;
      }
      continue;
    }
    if (line[0] == '#') return fail("unexpected comment");
    PromSample sample;
    std::size_t pos = 0;
    sample.name = ReadName(line, pos, true);
    if (sample.name.empty()) return fail("bad metric name");
    std::string series_key = sample.name + "{";
    if (pos < line.size() && line[pos] == '{') {
      ++pos;
      while (pos < line.size() && line[pos] != '}') {
        const std::string label = ReadName(line, pos, false);
        if (label.empty() || pos + 1 >= line.size() || line[pos] != '=' || line[pos + 1] != '"') {
          return fail("bad label in " + sample.name);
        }
        pos += 2;
        std::string value;
        while (pos < line.size() && line[pos] != '"') {
          if (line[pos] == '\\') {
            if (pos + 1 >= line.size()) return fail("dangling escape");
            const char e = line[pos + 1];
            if (e == '\\')
              value += '\\';
            else if (e == '"')
              value += '"';
            else if (e == 'n')
              value += '\n';
            else
              return fail(std::string("bad escape \\") + e);
            pos += 2;
          } else {
            value += line[pos++];
          }
        }
        if (pos >= line.size()) return fail("unterminated label value");
        ++pos;  // closing quote
        if (!sample.labels.emplace(label, value).second) return fail("label " + label + " twice");
        if (pos < line.size() && line[pos] == ',') ++pos;
      }
      if (pos >= line.size()) return fail("unterminated label set");
      ++pos;  // '}'
    }
    if (pos >= line.size() || line[pos] != ' ') return fail("expected one space before the value");
    const auto value = ParseValue(line.substr(pos + 1));
    if (!value) return fail("bad value '" + std::string(line.substr(pos + 1)) + "'");
    sample.value = *value;

    std::string suffix;
    const std::string family = BaseFamily(sample.name, out.families, &suffix);
    auto fam = out.families.find(family);
    if (fam == out.families.end() || fam->second.type.empty())
      return fail("sample of undeclared " + family);
    sampled_families.insert(family);
    const std::string type = fam->second.type;
    if (type == "histogram" && suffix.empty()) return fail("histogram sample without a suffix");
    if (type == "counter" && !(sample.value >= 0)) return fail("negative counter");
    std::string without_le = family + "{";
    for (const auto& [k, v] : sample.labels) {
      series_key += k + "=" + v + ",";
      if (k != "le") without_le += k + "=" + v + ",";
    }
    if (!seen_series.insert(series_key).second) return fail("duplicate series " + series_key);
    if (suffix == "_bucket") {
      const auto le = sample.labels.find("le");
      if (le == sample.labels.end()) return fail("bucket without le");
      auto& [prev, inf] = last_bucket[without_le];
      if (inf) return fail("bucket after le=\"+Inf\"");
      if (sample.value < prev) return fail("buckets are not cumulative");
      prev = sample.value;
      inf = le->second == "+Inf";
    } else if (suffix == "_count") {
      const auto it = last_bucket.find(without_le);
      if (it == last_bucket.end() || !it->second.second)
        return fail("_count before a le=\"+Inf\" bucket");
      if (it->second.first != sample.value) return fail("_count differs from the +Inf bucket");
    }
    out.samples.push_back(std::move(sample));
  }
  return out;
}

}  // namespace clawguard::host::testing
