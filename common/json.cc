#include "common/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gpulaunch {

Json& Json::Set(const std::string& key, Json v) {
  for (auto& [k, val] : members_) {
    if (k == key) return val = std::move(v);
  }
  members_.emplace_back(key, std::move(v));
  return members_.back().second;
}

const Json* Json::Find(const std::string& key) const {
  for (const auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}

namespace {

void WriteString(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

void Json::WriteTo(std::string& out, int indent) const {
  switch (type_) {
    case Type::kNull: out += "null"; break;
    case Type::kBool: out += bool_ ? "true" : "false"; break;
    case Type::kNumber: {
      // Shortest text that reads back to the same double.
      char buf[40];
      const auto res = std::to_chars(buf, buf + sizeof buf, number_);
      out.append(buf, res.ptr);
      break;
    }
    case Type::kString: WriteString(out, string_); break;
    case Type::kArray: {
      // Arrays of objects get one item per line; scalars stay on one line.
      const bool tall = !items_.empty() && items_.front().type_ == Type::kObject;
      out += '[';
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += ',';
        if (tall) out += "\n" + std::string(indent + 2, ' ');
        items_[i].WriteTo(out, indent + 2);
      }
      if (tall) out += "\n" + std::string(indent, ' ');
      out += ']';
      break;
    }
    case Type::kObject: {
      out += '{';
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out += ',';
        WriteString(out, members_[i].first);
        out += ':';
        members_[i].second.WriteTo(out, indent);
      }
      out += '}';
      break;
    }
  }
}

std::string Json::Write() const {
  std::string out;
  WriteTo(out, 0);
  return out + "\n";
}

class JsonParser {
 public:
  JsonParser(std::string_view text, const std::string& origin) : t_(text), origin_(origin) {}

  StatusOr<Json> Document() {
    GL_ASSIGN_OR_RETURN(Json v, Value(0));
    Skip();
    if (i_ != t_.size()) return Error("unexpected text after the value");
    return v;
  }

 private:
  Status Error(const std::string& why) const {
    return InvalidArgument(origin_ + ":" + std::to_string(line_) + ": " + why);
  }
  void Skip() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r')) {
      if (t_[i_] == '\n') ++line_;
      ++i_;
    }
  }
  bool Eat(char c) {
    Skip();
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  StatusOr<std::string> String() {
    if (!Eat('"')) return Error("expected a string");
    std::string s;
    while (i_ < t_.size() && t_[i_] != '"') {
      char c = t_[i_++];
      if (c == '\n') return Error("newline inside a string");
      if (c == '\\') {
        if (i_ >= t_.size()) break;
        const char e = t_[i_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'u': {
            if (i_ + 4 > t_.size()) return Error("short \\u escape");
            c = static_cast<char>(std::strtol(std::string(t_.substr(i_, 4)).c_str(), nullptr, 16));
            i_ += 4;
            break;
          }
          default: c = e;
        }
      }
      s += c;
    }
    if (!Eat('"')) return Error("unterminated string");
    return s;
  }
  StatusOr<Json> Value(int depth) {
    if (depth > 64) return Error("nesting deeper than 64");
    Skip();
    if (i_ >= t_.size()) return Error("unexpected end of input");
    const int line = line_;
    Json v;
    const char c = t_[i_];
    if (c == '{') {
      ++i_;
      v = Json::Object();
      if (!Eat('}')) {
        do {
          GL_ASSIGN_OR_RETURN(std::string key, String());
          if (!Eat(':')) return Error("expected ':' after \"" + key + "\"");
          GL_ASSIGN_OR_RETURN(Json member, Value(depth + 1));
          if (v.Find(key)) return Error("key \"" + key + "\" appears twice");
          v.members_.emplace_back(std::move(key), std::move(member));
        } while (Eat(','));
        if (!Eat('}')) return Error("expected ',' or '}'");
      }
    } else if (c == '[') {
      ++i_;
      v = Json::Array();
      if (!Eat(']')) {
        do {
          GL_ASSIGN_OR_RETURN(Json item, Value(depth + 1));
          v.items_.push_back(std::move(item));
        } while (Eat(','));
        if (!Eat(']')) return Error("expected ',' or ']'");
      }
    } else if (c == '"') {
      GL_ASSIGN_OR_RETURN(std::string s, String());
      v = Json(std::move(s));
    } else if (t_.substr(i_, 4) == "true") {
      i_ += 4;
      v = Json(true);
    } else if (t_.substr(i_, 5) == "false") {
      i_ += 5;
      v = Json(false);
    } else if (t_.substr(i_, 4) == "null") {
      i_ += 4;
    } else {
      const std::string rest(t_.substr(i_, std::min<size_t>(64, t_.size() - i_)));
      char* end = nullptr;
      const double d = std::strtod(rest.c_str(), &end);
      if (end == rest.c_str()) return Error(std::string("unexpected character '") + c + "'");
      i_ += static_cast<size_t>(end - rest.c_str());
      v = Json(d);
    }
    v.line_ = line;
    return v;
  }

  std::string_view t_;
  std::string origin_;
  size_t i_ = 0;
  int line_ = 1;
};

StatusOr<Json> ParseJson(std::string_view text, const std::string& origin) {
  return JsonParser(text, origin).Document();
}

}  // namespace gpulaunch
