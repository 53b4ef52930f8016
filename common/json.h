// A JSON value for gpulaunch's own files (cluster descriptions, summaries,
// policies, baselines), read and escaped by nlohmann-json (json.cc; the header
// stays free of it, so users of the installed libgpurt need not have it).
// What this type adds: objects keep their key order and refuse a key given
// twice, every value remembers the line it started on (so schema errors can
// name origin:line and the field), and numbers are doubles written in the
// shortest form that reads back exactly, so write(read(x)) reproduces what
// write produced, byte for byte. Parse errors name origin:line.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Json() = default;
  Json(bool b) : type_(Type::kBool), bool_(b) {}                              // NOLINT
  Json(double d) : type_(Type::kNumber), number_(d) {}                        // NOLINT
  Json(int i) : type_(Type::kNumber), number_(i) {}                           // NOLINT
  Json(int64_t i) : type_(Type::kNumber), number_(static_cast<double>(i)) {}  // NOLINT
  Json(const char* s) : type_(Type::kString), string_(s) {}                   // NOLINT
  Json(std::string s) : type_(Type::kString), string_(std::move(s)) {}        // NOLINT
  static Json Array() { Json j; j.type_ = Type::kArray; return j; }
  static Json Object() { Json j; j.type_ = Type::kObject; return j; }

  Type type() const { return type_; }
  bool is(Type t) const { return type_ == t; }
  bool AsBool() const { return bool_; }
  double AsNumber() const { return number_; }
  const std::string& AsString() const { return string_; }
  const std::vector<Json>& items() const { return items_; }
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }
  int line() const { return line_; }  // where it started in the parsed text

  Json& Push(Json v) { items_.push_back(std::move(v)); return items_.back(); }
  Json& Set(const std::string& key, Json v);
  const Json* Find(const std::string& key) const;

  // Compact writer with newlines between array items of objects, for diffs.
  std::string Write() const;

 private:
  friend class JsonParser;
  void WriteTo(std::string& out, int indent) const;
  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
  int line_ = 0;
};

// Nesting deeper than 64 levels, a number outside a double's range and a
// string that is not UTF-8 are errors too.
StatusOr<Json> ParseJson(std::string_view text, const std::string& origin);

// `s` as a JSON string literal, quotes included: the one escaper for every
// JSON gpulaunch writes (bytes that are not UTF-8 become U+FFFD).
std::string JsonQuote(std::string_view s);

}  // namespace gpulaunch
