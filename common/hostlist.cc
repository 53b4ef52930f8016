#include "common/hostlist.h"

#include <algorithm>
#include <cctype>

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

// Checks one expanded name. Slurm takes any other character as part of a
// name; gpulaunch refuses it, since no host name resolves with it.
Status CheckName(std::string_view expr, const std::string& name) {
  if (name.empty()) return Malformed(expr, "empty host name");
  // DNS's limits (RFC 1035): no resolver finds a longer name.
  if (name.size() > 253) {
    return Malformed(expr, "host name of " + std::to_string(name.size()) +
                               " characters; DNS names hold at most 253 (labels of at most 63 between dots)");
  }
  size_t label_start = 0;
  while (label_start <= name.size()) {
    const size_t dot = std::min(name.find('.', label_start), name.size());
    if (dot - label_start > 63) {
      return Malformed(expr, "host name '" + Excerpt(name) + "' has a label of " + std::to_string(dot - label_start) +
                                 " characters between dots; DNS labels hold at most 63");
    }
    label_start = dot + 1;
  }
  for (char c : name) {
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) {
      return Malformed(expr, "character '" + Excerpt(std::string_view(&c, 1)) +
                                 "' is not allowed in a host name (Slurm would keep it as part of the name; host "
                                 "names hold letters, digits, '-', '.' and '_')");
    }
  }
  return Status::Ok();
}

// Expands one top-level item: literals L0..Ln around bracket groups G1..Gn.
// The order is Slurm 22.05's (scontrol show hostnames, recorded in
// tests/data/oracles/): the last group varies fastest, then the first, the
// second, and so on, so "a[1-2]b[1-2]c[1-2]" gives a1b1c1 a1b1c2 a2b1c1 ...;
// for one or two groups that is the written order. Rank order follows host
// order, so reading a list as srun does matters.
Status ExpandItem(std::string_view expr, std::string_view item, std::vector<std::string>& out) {
  std::vector<std::string> literals;
  std::vector<std::vector<std::string>> groups;
  size_t i = 0;
  size_t names = 1;
  while (true) {
    const size_t open = item.find('[', i);
    const size_t close_early = item.find(']', i);
    if (close_early != std::string_view::npos && (open == std::string_view::npos || close_early < open)) {
      // With no '[' at all, Slurm keeps the ']' as part of one odd name.
      return Malformed(expr, item.find('[') == std::string_view::npos
                                 ? "']' without '[' (Slurm would keep it as part of the name; host names cannot hold it)"
                                 : "']' without '['");
    }
    literals.emplace_back(item.substr(i, open == std::string_view::npos ? std::string_view::npos : open - i));
    if (open == std::string_view::npos) break;
    const size_t close = item.find(']', open);
    if (close == std::string_view::npos) return Malformed(expr, "'[' without ']'");
    GL_ASSIGN_OR_RETURN(std::vector<std::string> values, ExpandRanges(expr, item.substr(open + 1, close - open - 1)));
    names *= values.size();
    if (names > kMaxHostlistExpansion) return TooManyHosts(expr);
    groups.push_back(std::move(values));
    i = close + 1;
  }
  if (!groups.empty() && !literals.back().empty()) {
    return Malformed(expr, "text after the last ']' ('" + Excerpt(literals.back()) +
                               "'), which Slurm refuses as an invalid hostlist; list such names one by one");
  }
  // Odometer over the groups; digit order from slowest: G(n-1) ... G1, Gn.
  const size_t n = groups.size();
  std::vector<size_t> slowest_first;
  for (size_t g = n >= 2 ? n - 1 : 0; g-- > 0;) slowest_first.push_back(g);
  if (n >= 1) slowest_first.push_back(n - 1);
  std::vector<size_t> at(n, 0);
  for (size_t k = 0; k < names; ++k) {
    std::string name = literals[0];
    for (size_t g = 0; g < n; ++g) name += groups[g][at[g]] + literals[g + 1];
    GL_RETURN_IF_ERROR(CheckName(expr, name));
    out.push_back(std::move(name));
    for (size_t d = slowest_first.size(); d-- > 0;) {
      const size_t g = slowest_first[d];
      if (++at[g] < groups[g].size()) break;
      at[g] = 0;
    }
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
  std::vector<std::string> hosts;
  // Items are separated by commas or white space outside brackets, and empty
  // items are skipped ("n1,,n2", "n1 n2"), as Slurm does.
  std::string item;
  int depth = 0;
  auto flush = [&]() -> Status {
    const size_t before = hosts.size();
    if (!item.empty()) GL_RETURN_IF_ERROR(ExpandItem(expr, item, hosts));
    item.clear();
    // A name that begins with '-' reaches mpirun's and ssh's own option
    // parsers as an option ("ssh -F file"): no host is named so.
    const auto dash = std::find_if(hosts.begin() + static_cast<ptrdiff_t>(before), hosts.end(),
                                   [](const std::string& h) { return !h.empty() && h[0] == '-'; });
    if (dash != hosts.end()) {
      return InvalidArgument("host name '" + Excerpt(*dash) +
                             "' begins with '-', which mpirun and ssh would read as an option; no host is named so: "
                             "remove it or fix the name");
    }
    if (hosts.size() > kMaxHostlistExpansion) return TooManyHosts(expr);
    return Status::Ok();
  };
  for (char c : expr) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (depth == 0 && (c == ',' || isspace(static_cast<unsigned char>(c)))) {
      GL_RETURN_IF_ERROR(flush());
    } else {
      item.push_back(c);
    }
  }
  GL_RETURN_IF_ERROR(flush());
  if (hosts.empty()) return Malformed(expression, "it names no host");
  return hosts;
}

}  // namespace gpulaunch
