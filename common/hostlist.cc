#include "common/hostlist.h"

#include "common/strings.h"

namespace gpulaunch {
namespace {

Status Malformed(std::string_view expr, std::string_view why) {
  return InvalidArgument("malformed hostlist '" + Excerpt(expr) + "': " + std::string(why) +
                         " (expected names like node07 or node[01-04,09])");
}

std::string Pad(int64_t v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// Expands one bracket body "01-04,09" into padded strings.
Status TooManyHosts(std::string_view expr) {
  return Malformed(expr, "expands to more than " + std::to_string(kMaxHostlistExpansion) +
                             " hosts, gpulaunch's limit for one list (Slurm's for one range; Slurm would expand a "
                             "longer product of ranges, gpulaunch does not)");
}

StatusOr<std::vector<std::string>> ExpandRanges(std::string_view expr, std::string_view body) {
  std::vector<std::string> out;
  for (const std::string& part : Split(body, ',')) {
    const auto dash = part.find('-');
    const std::string lo_text = part.substr(0, dash);
    const std::string hi_text = dash == std::string::npos ? lo_text : part.substr(dash + 1);
    const auto lo = ParseInt(lo_text);
    const auto hi = ParseInt(hi_text);
    if (!lo || !hi || *lo < 0) return Malformed(expr, "'" + part + "' is not a number or range");
    if (*hi < *lo) return Malformed(expr, "range '" + part + "' runs backwards");
    // hi - lo cannot overflow: both are whole numbers from 0.
    if (static_cast<uint64_t>(*hi - *lo) + out.size() >= kMaxHostlistExpansion) {
      return Malformed(expr, "range '" + part + "' holds more than " + std::to_string(kMaxHostlistExpansion) +
                                 " hosts, Slurm's limit for one range");
    }
    // Counted from lo, so that hi = INT64_MAX ends (v <= hi would never fail).
    for (int64_t k = 0; k <= *hi - *lo; ++k) out.push_back(Pad(*lo + k, lo_text.size()));
  }
  return out;
}

// Expands one top-level item that may hold several bracket groups.
Status ExpandItem(std::string_view expr, std::string_view item, std::vector<std::string>& out) {
  std::vector<std::string> partial = {""};
  size_t i = 0;
  while (i < item.size()) {
    const size_t open = item.find('[', i);
    const size_t close_early = item.find(']', i);
    if (close_early != std::string_view::npos && (open == std::string_view::npos || close_early < open)) {
      return Malformed(expr, "']' without '['");
    }
    const std::string_view literal = item.substr(i, open == std::string_view::npos ? std::string_view::npos : open - i);
    for (auto& p : partial) p += literal;
    if (open == std::string_view::npos) break;
    const size_t close = item.find(']', open);
    if (close == std::string_view::npos) return Malformed(expr, "'[' without ']'");
    GL_ASSIGN_OR_RETURN(std::vector<std::string> suffixes, ExpandRanges(expr, item.substr(open + 1, close - open - 1)));
    if (partial.size() * suffixes.size() > kMaxHostlistExpansion) return TooManyHosts(expr);
    std::vector<std::string> next;
    next.reserve(partial.size() * suffixes.size());
    for (const auto& p : partial)
      for (const auto& s : suffixes) next.push_back(p + s);
    partial = std::move(next);
    i = close + 1;
  }
  for (auto& p : partial) {
    if (p.empty()) return Malformed(expr, "empty host name");
    for (char c : p) {
      if (!(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) {
        return Malformed(expr, std::string("character '") + c + "' is not allowed in a host name");
      }
    }
    out.push_back(std::move(p));
  }
  return Status::Ok();
}

// Splits "node012" into ("node", "012"); no trailing digits gives ("name", "").
std::pair<std::string, std::string> SplitTrailingNumber(const std::string& name) {
  size_t i = name.size();
  while (i > 0 && isdigit(static_cast<unsigned char>(name[i - 1]))) --i;
  return {name.substr(0, i), name.substr(i)};
}

}  // namespace

std::string CompressHostlist(const std::vector<std::string>& hosts) {
  std::vector<std::string> items;
  size_t i = 0;
  while (i < hosts.size()) {
    const auto [prefix, digits] = SplitTrailingNumber(hosts[i]);
    if (digits.empty()) {
      items.push_back(hosts[i++]);
      continue;
    }
    // Collect following names with the same prefix and digit width.
    std::vector<std::string> nums = {digits};
    size_t j = i + 1;
    for (; j < hosts.size(); ++j) {
      const auto [p, d] = SplitTrailingNumber(hosts[j]);
      if (p != prefix || d.size() != digits.size() || d.empty()) break;
      nums.push_back(d);
    }
    if (nums.size() == 1) {
      items.push_back(hosts[i++]);
      continue;
    }
    std::string ranges;
    for (size_t k = 0; k < nums.size();) {
      size_t m = k;
      while (m + 1 < nums.size() && std::stoll(nums[m + 1]) == std::stoll(nums[m]) + 1) ++m;
      if (!ranges.empty()) ranges += ',';
      ranges += nums[k] + (m > k ? "-" + nums[m] : "");
      k = m + 1;
    }
    items.push_back(prefix + "[" + ranges + "]");
    i = j;
  }
  return Join(items, ",");
}

StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view expression) {
  const std::string_view expr = Trim(expression);
  if (expr.empty()) return Malformed(expression, "it is empty");
  std::vector<std::string> hosts;
  for (const std::string& item : SplitOutsideBrackets(expr, ',')) {
    GL_RETURN_IF_ERROR(ExpandItem(expr, Trim(item), hosts));
    if (hosts.size() > kMaxHostlistExpansion) return TooManyHosts(expr);
  }
  return hosts;
}

}  // namespace gpulaunch
