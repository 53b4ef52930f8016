#include "slurm/slurm_policy.h"

#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "common/json.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

// Compiled on first use, not at every start of every program that links
// this file (gpulaunch itself, whose launches never read a policy).
const std::regex& NamePattern() {
  static const std::regex name("^[A-Za-z][A-Za-z0-9_-]{0,31}$");
  return name;
}

// Slurm keeps account names, and by default user names, in lower case
// (sacctmgr folds them; sbatch -A ML runs as account ml), so a team or user
// written with capitals would not be the Slurm object the scripts compare
// with: refused, saying which spelling to write.
Status NotFoldedBySlurm(const std::string& name, const char* what, const char* slurm_object, const std::string& where) {
  if (AsciiLower(name) == name) return Status::Ok();
  return InvalidArgument(where + ": " + what + " \"" + name + "\" has capitals; it is a Slurm " + slurm_object +
                         ", and Slurm keeps " + slurm_object + " names in lower case (sacctmgr folds them): write \"" +
                         AsciiLower(name) + "\"");
}

const std::regex& TimePattern() {
  static const std::regex time("^(now|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?)$");
  return time;
}

StatusOr<int> Count(const Json& j, const std::string& key, const std::string& where, int fallback, int lo, int hi) {
  const Json* v = j.Find(key);
  if (!v) return fallback;
  // Range first: casting a number outside int's range is undefined.
  if (!v->is(Json::Type::kNumber) || !(v->AsNumber() >= lo && v->AsNumber() <= hi) ||
      v->AsNumber() != std::floor(v->AsNumber())) {
    return InvalidArgument(where + ": \"" + key + "\" must be a whole number from " + std::to_string(lo) + " to " +
                           std::to_string(hi));
  }
  return static_cast<int>(v->AsNumber());
}

StatusOr<std::string> Text(const Json& j, const std::string& key, const std::string& where, const std::regex& pattern,
                           const char* example) {
  const Json* v = j.Find(key);
  if (!v || !v->is(Json::Type::kString) || !std::regex_match(v->AsString(), pattern)) {
    return InvalidArgument(where + ": \"" + key + "\" must be like " + example);
  }
  return v->AsString();
}

// Every key of `obj` must be one of `known`: a typo ("gaurantee") is an
// error, not a default.
Status OnlyKnownKeys(const Json& obj, std::initializer_list<const char*> known, const std::string& origin,
                     const std::string& what) {
  if (!obj.is(Json::Type::kObject)) {
    return InvalidArgument(origin + ":" + std::to_string(obj.line()) + ": " + what + " must be an object");
  }
  for (const auto& [key, value] : obj.members()) {
    bool ok = false;
    std::string list;
    for (const char* k : known) {
      ok |= key == k;
      list += std::string(list.empty() ? "" : ", ") + k;
    }
    if (!ok) {
      return InvalidArgument(origin + ":" + std::to_string(value.line()) + ": unknown key \"" + key + "\" in " + what +
                             " (it takes " + list + ")");
    }
  }
  return Status::Ok();
}

// A start time that is on the calendar (the pattern checked the shape).
bool RealTime(const std::string& t) {
  if (t == "now") return true;
  const int y = std::stoi(t.substr(0, 4)), mo = std::stoi(t.substr(5, 2)), d = std::stoi(t.substr(8, 2));
  const int h = std::stoi(t.substr(11, 2)), mi = std::stoi(t.substr(14, 2)), sec = t.size() > 16 ? std::stoi(t.substr(17, 2)) : 0;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || sec > 59) return false;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d >= 1 && d <= kDays[mo - 1] + (mo == 2 && leap ? 1 : 0);
}

// A team's "users": each a name, in one team only (`team_of_user` holds the
// teams read so far).
Status ReadTeamUsers(const Json& t, const std::string& origin, const std::string& where,
                     std::map<std::string, std::string>& team_of_user, PolicyTeam& team) {
  const Json* users = t.Find("users");
  if (!users) return Status::Ok();
  if (!users->is(Json::Type::kArray)) return InvalidArgument(where + ": \"users\" must be an array of names");
  for (const Json& u : users->items()) {
    if (!u.is(Json::Type::kString) || !std::regex_match(u.AsString(), NamePattern())) {
      return InvalidArgument(where + ": user names must be like \"alice\"");
    }
    GL_RETURN_IF_ERROR(NotFoldedBySlurm(u.AsString(), "user", "user", origin + ":" + std::to_string(u.line())));
    const auto [it, fresh] = team_of_user.emplace(u.AsString(), team.name);
    if (!fresh) {
      return InvalidArgument(origin + ":" + std::to_string(u.line()) + ": user " + u.AsString() +
                             (it->second == team.name ? " is listed twice in team " + team.name
                                                      : " is in teams " + it->second + " and " + team.name +
                                                            "; a user belongs to one team"));
    }
    team.users.push_back(u.AsString());
  }
  return Status::Ok();
}

// A team's name and GPU counts (its users: ReadTeamUsers).
StatusOr<PolicyTeam> ReadTeam(const Json& t, const std::string& origin) {
  const std::string where = origin + ":" + std::to_string(t.line());
  GL_RETURN_IF_ERROR(
      OnlyKnownKeys(t, {"name", "guarantee", "nominal", "borrow_limit", "lend_limit", "users"}, origin, "a team"));
  PolicyTeam team;
  team.where = where;
  GL_ASSIGN_OR_RETURN(team.name, Text(t, "name", where, NamePattern(), "\"ml\" (a letter, then letters, digits, _ or -)"));
  GL_RETURN_IF_ERROR(NotFoldedBySlurm(team.name, "team", "account", where));
  if (team.name == "borrowed") {
    return InvalidArgument(where + ": a team may not be called \"borrowed\": its Slurm partition gl-borrowed is the "
                           "borrowed tier's");
  }
  GL_ASSIGN_OR_RETURN(team.nominal, Count(t, "nominal", where, -1, 0, 10000000));
  if (team.nominal < 0) return InvalidArgument(where + ": team " + team.name + " needs \"nominal\" (GPUs)");
  GL_ASSIGN_OR_RETURN(team.guarantee, Count(t, "guarantee", where, 0, 0, 10000000));
  GL_ASSIGN_OR_RETURN(team.borrow_limit, Count(t, "borrow_limit", where, 0, 0, 10000000));
  GL_ASSIGN_OR_RETURN(team.lend_limit, Count(t, "lend_limit", where, -1, 0, 10000000));
  if (team.guarantee > team.nominal) {
    return InvalidArgument(where + ": team " + team.name + ": guarantee " + std::to_string(team.guarantee) +
                           " exceeds nominal " + std::to_string(team.nominal));
  }
  return team;
}

StatusOr<PolicyReservation> ReadReservation(const Json& r, const std::string& origin,
                                            const std::set<std::string>& teams) {
  const std::string where = origin + ":" + std::to_string(r.line());
  GL_RETURN_IF_ERROR(OnlyKnownKeys(r, {"name", "team", "start", "nodes", "minutes"}, origin, "a reservation"));
  PolicyReservation res;
  res.where = where;
  GL_ASSIGN_OR_RETURN(res.name, Text(r, "name", where, NamePattern(), "\"demo\""));
  GL_ASSIGN_OR_RETURN(res.team, Text(r, "team", where, NamePattern(), "\"ml\""));
  if (!teams.count(res.team)) return InvalidArgument(where + ": reservation " + res.name + " names unknown team " + res.team);
  GL_ASSIGN_OR_RETURN(res.start, Text(r, "start", where, TimePattern(), "\"2026-12-01T10:00:00\" or \"now\""));
  if (!RealTime(res.start)) return InvalidArgument(where + ": \"start\" " + res.start + " is not a date and time");
  GL_ASSIGN_OR_RETURN(res.nodes, Count(r, "nodes", where, 1, 1, 100000));
  GL_ASSIGN_OR_RETURN(res.minutes, Count(r, "minutes", where, 60, 1, 525600));
  return res;
}

}  // namespace

StatusOr<PolicyFile> ParsePolicyFile(const std::string& text, const std::string& origin) {
  GL_ASSIGN_OR_RETURN(Json root, ParseJson(text, origin));
  const Json* format = root.is(Json::Type::kObject) ? root.Find("format") : nullptr;
  if (!format || !format->is(Json::Type::kString) || format->AsString() != "gpulaunch-policy/v1") {
    return InvalidArgument(origin + ":1: not a policy file: \"format\" must be \"gpulaunch-policy/v1\"");
  }
  GL_RETURN_IF_ERROR(OnlyKnownKeys(root, {"format", "grace_s", "teams", "reservations"}, origin, "the policy"));
  PolicyFile p;
  GL_ASSIGN_OR_RETURN(p.grace_s, Count(root, "grace_s", origin, 300, 0, 86400));
  const Json* teams = root.Find("teams");
  if (!teams || !teams->is(Json::Type::kArray) || teams->items().empty()) {
    return InvalidArgument(origin + ": \"teams\" must be a non-empty array");
  }
  std::set<std::string> names;
  std::map<std::string, std::string> team_of_user;
  for (const Json& t : teams->items()) {
    GL_ASSIGN_OR_RETURN(PolicyTeam team, ReadTeam(t, origin));
    if (!names.insert(team.name).second) {
      return InvalidArgument(origin + ":" + std::to_string(t.line()) + ": team " + team.name + " appears twice");
    }
    GL_RETURN_IF_ERROR(ReadTeamUsers(t, origin, origin + ":" + std::to_string(t.line()), team_of_user, team));
    p.teams.push_back(team);
  }
  if (const Json* rs = root.Find("reservations"); rs) {
    if (!rs->is(Json::Type::kArray)) return InvalidArgument(origin + ": \"reservations\" must be an array");
    for (const Json& r : rs->items()) {
      GL_ASSIGN_OR_RETURN(PolicyReservation res, ReadReservation(r, origin, names));
      p.reservations.push_back(res);
    }
  }
  return p;
}

Status CheckPolicyFits(const PolicyFile& p, int nodes) {
  for (const PolicyReservation& r : p.reservations) {
    if (r.nodes > nodes) {
      return InvalidArgument(r.where + ": reservation " + r.name + " asks for " + std::to_string(r.nodes) +
                             " nodes, and the cluster has " + std::to_string(nodes));
    }
  }
  return Status::Ok();
}

Status CheckPolicyReservationsAhead(const PolicyFile& p, std::time_t now) {
  for (const PolicyReservation& r : p.reservations) {
    if (r.start == "now") continue;
    std::tm start{};
    start.tm_year = std::stoi(r.start.substr(0, 4)) - 1900;
    start.tm_mon = std::stoi(r.start.substr(5, 2)) - 1;
    start.tm_mday = std::stoi(r.start.substr(8, 2));
    start.tm_hour = std::stoi(r.start.substr(11, 2));
    start.tm_min = std::stoi(r.start.substr(14, 2));
    start.tm_sec = r.start.size() > 16 ? std::stoi(r.start.substr(17, 2)) : 0;
    start.tm_isdst = -1;
    if (std::mktime(&start) >= now) continue;
    char here[32];
    std::strftime(here, sizeof here, "%Y-%m-%dT%H:%M:%S", std::localtime(&now));
    return InvalidArgument(r.where + ": reservation " + r.name + " starts at " + r.start + ", which has passed (it is " +
                           here + " here): give a later \"start\", or \"now\", or remove it");
  }
  return Status::Ok();
}

Status CheckPolicySlurmCanEnforce(const PolicyFile& p) {
  for (const PolicyTeam& t : p.teams) {
    if (t.lend_limit >= 0) {
      return InvalidArgument(t.where + ": team " + t.name + " sets \"lend_limit\", which Slurm cannot enforce (a "
                             "borrowed job may take any idle GPU, docs/slurm.md); remove it for slurm-config "
                             "(gpulaunch sim --quota still takes a lend limit)");
    }
  }
  return Status::Ok();
}

std::string PolicyQuotaText(const PolicyFile& p) {
  std::string s;
  for (const PolicyTeam& t : p.teams) {
    s += (s.empty() ? "" : ",") + t.name + ":" + std::to_string(t.guarantee) + "/" + std::to_string(t.nominal) + "/" +
         std::to_string(t.borrow_limit) + (t.lend_limit >= 0 ? "/" + std::to_string(t.lend_limit) : "");
  }
  return s;
}

}  // namespace gpulaunch
