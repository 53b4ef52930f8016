#include "launcher/check/linkcheck/link_result.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/json.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

std::string Fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string SizeName(uint64_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

double Num(const Json& j, const std::string& key) {
  const Json* v = j.Find(key);
  return v && v->is(Json::Type::kNumber) ? v->AsNumber() : 0;
}

std::string Str(const Json& j, const std::string& key) {
  const Json* v = j.Find(key);
  return v && v->is(Json::Type::kString) ? v->AsString() : "";
}

}  // namespace

std::string LinkResultsJson(const std::vector<LinkResult>& links) {
  Json root = Json::Object();
  root.Set("format", "gpulaunch-linkcheck/v1");
  Json list = Json::Array();
  for (const LinkResult& l : links) {
    Json j = Json::Object();
    j.Set("from", l.from);
    j.Set("to", l.to);
    Json tl = Json::Array();
    for (const std::string& t : l.transports) tl.Push(t);
    j.Set("transports", tl);
    Json lat = Json::Object();
    lat.Set("iterations", l.iterations);
    lat.Set("round_trip_median_us", l.rtt_median_us);
    lat.Set("round_trip_p99_us", l.rtt_p99_us);
    lat.Set("one_way_median_us", l.rtt_median_us / 2);
    j.Set("latency", lat);
    Json bw = Json::Array();
    for (const BandwidthSample& b : l.bandwidth) {
      Json e = Json::Object();
      e.Set("message_bytes", static_cast<double>(b.message_bytes));
      e.Set("total_bytes", static_cast<double>(b.total_bytes));
      e.Set("seconds", b.seconds);
      if (b.warmup_bytes > 0) e.Set("warmup_bytes", static_cast<double>(b.warmup_bytes));
      e.Set("gbps", b.gbps());
      e.Set("mib_per_s", b.mibs());
      bw.Push(e);
    }
    j.Set("bandwidth", bw);
    j.Set("error", l.error);
    if (l.started_late_ms >= 0) j.Set("started_late_ms", l.started_late_ms);
    if (l.ended_ms >= 0) j.Set("ended_ms", l.ended_ms);
    list.Push(j);
  }
  root.Set("links", list);
  return root.Write() + "\n";
}

StatusOr<std::vector<LinkResult>> ParseLinkResultsJson(const std::string& text, const std::string& origin) {
  GL_ASSIGN_OR_RETURN(Json root, ParseJson(text, origin));
  if (!root.is(Json::Type::kObject) || Str(root, "format") != "gpulaunch-linkcheck/v1") {
    return InvalidArgument(origin + ": not linkcheck results (format gpulaunch-linkcheck/v1, as --format json or "
                           "--save write them)");
  }
  std::vector<LinkResult> out;
  const Json* links = root.Find("links");
  if (!links || !links->is(Json::Type::kArray)) return InvalidArgument(origin + ": \"links\" must be an array");
  for (const Json& j : links->items()) {
    LinkResult l;
    l.from = Str(j, "from");
    l.to = Str(j, "to");
    if (l.from.empty() || l.to.empty()) {
      return InvalidArgument(origin + ":" + std::to_string(j.line()) + ": a link needs \"from\" and \"to\"");
    }
    if (const Json* tl = j.Find("transports"); tl && tl->is(Json::Type::kArray)) {
      for (const Json& t : tl->items())
        if (t.is(Json::Type::kString)) l.transports.push_back(t.AsString());
    }
    if (const Json* lat = j.Find("latency"); lat && lat->is(Json::Type::kObject)) {
      l.iterations = static_cast<int>(Num(*lat, "iterations"));
      l.rtt_median_us = Num(*lat, "round_trip_median_us");
      l.rtt_p99_us = Num(*lat, "round_trip_p99_us");
    }
    if (const Json* bw = j.Find("bandwidth"); bw && bw->is(Json::Type::kArray)) {
      for (const Json& e : bw->items()) {
        l.bandwidth.push_back(BandwidthSample{static_cast<uint64_t>(Num(e, "message_bytes")),
                                              static_cast<uint64_t>(Num(e, "total_bytes")), Num(e, "seconds"),
                                              static_cast<uint64_t>(Num(e, "warmup_bytes"))});
      }
    }
    l.error = Str(j, "error");
    if (const Json* late = j.Find("started_late_ms"); late && late->is(Json::Type::kNumber)) {
      l.started_late_ms = late->AsNumber();
    }
    if (const Json* ended = j.Find("ended_ms"); ended && ended->is(Json::Type::kNumber)) l.ended_ms = ended->AsNumber();
    out.push_back(std::move(l));
  }
  return out;
}

std::string RenderLinkTable(const std::vector<LinkResult>& links) {
  std::vector<uint64_t> sizes;
  for (const LinkResult& l : links)
    for (const BandwidthSample& b : l.bandwidth)
      if (std::find(sizes.begin(), sizes.end(), b.message_bytes) == sizes.end()) sizes.push_back(b.message_bytes);
  std::sort(sizes.begin(), sizes.end());
  char cell[128];
  std::snprintf(cell, sizeof cell, "%-12s %-12s %-22s %11s %11s %11s", "FROM", "TO", "TRANSPORT", "RTT median",
                "RTT p99", "one-way");
  std::string out = cell;
  for (uint64_t s : sizes) {
    std::snprintf(cell, sizeof cell, " %18s", ("BW " + SizeName(s)).c_str());
    out += cell;
  }
  out += "\n";
  for (const LinkResult& l : links) {
    if (!l.error.empty()) {
      std::snprintf(cell, sizeof cell, "%-12s %-12s ", l.from.c_str(), l.to.c_str());
      out += cell + std::string("FAILED: ") + l.error + "\n";
      continue;
    }
    const std::string tl = l.transports.empty() ? "?" : Join(l.transports, ",");
    std::snprintf(cell, sizeof cell, "%-12s %-12s %-22s %8.1f us %8.1f us %8.1f us", l.from.c_str(), l.to.c_str(),
                  tl.substr(0, 22).c_str(), l.rtt_median_us, l.rtt_p99_us, l.rtt_median_us / 2);
    out += cell;
    for (uint64_t s : sizes) {
      std::string v = "-";
      for (const BandwidthSample& b : l.bandwidth)
        if (b.message_bytes == s) v = Fixed(b.gbps(), 2) + " Gbps";
      std::snprintf(cell, sizeof cell, " %18s", v.c_str());
      out += cell;
    }
    out += "\n";
  }
  return out;
}

std::vector<std::string> CompareLinks(const std::vector<LinkResult>& baseline, const std::vector<LinkResult>& now,
                                      double tolerance_pct) {
  std::vector<std::string> out;
  for (const LinkResult& l : now) {
    const std::string name = l.from + " -> " + l.to;
    auto base = std::find_if(baseline.begin(), baseline.end(),
                             [&](const LinkResult& b) { return b.from == l.from && b.to == l.to; });
    if (base == baseline.end()) continue;  // a new link: nothing to compare with
    if (!l.error.empty()) {
      out.push_back(name + ": not measured now (" + l.error + ")");
      continue;
    }
    if (base->rtt_median_us > 0 && l.rtt_median_us > base->rtt_median_us * (1 + tolerance_pct / 100)) {
      out.push_back(name + ": latency " + Fixed(l.rtt_median_us, 1) + " us round trip, " +
                    Fixed((l.rtt_median_us / base->rtt_median_us - 1) * 100, 0) + "% above " +
                    Fixed(base->rtt_median_us, 1));
    }
    for (const BandwidthSample& b : l.bandwidth) {
      for (const BandwidthSample& was : base->bandwidth) {
        if (was.message_bytes != b.message_bytes || was.gbps() <= 0) continue;
        if (b.gbps() < was.gbps() * (1 - tolerance_pct / 100)) {
          out.push_back(name + ": bandwidth " + SizeName(b.message_bytes) + " " + Fixed(b.gbps(), 2) + " Gbps, " +
                        Fixed((1 - b.gbps() / was.gbps()) * 100, 0) + "% below " + Fixed(was.gbps(), 2));
        }
      }
    }
  }
  return out;
}

}  // namespace gpulaunch
