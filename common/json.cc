#include "common/json.h"

#include <charconv>
#include <cmath>
#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

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

std::string JsonQuote(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Json::WriteTo(std::string& out, int indent) const {
  switch (type_) {
    case Type::kNull: out += "null"; break;
    case Type::kBool: out += bool_ ? "true" : "false"; break;
    case Type::kNumber: {
      if (!std::isfinite(number_)) {  // JSON has no NaN or infinity
        out += "null";
        break;
      }
      // Shortest text that reads back to the same double (nlohmann-json
      // would write 5 as 5.0, and the files' schemas say 5).
      char buf[40];
      const auto res = std::to_chars(buf, buf + sizeof buf, number_);
      out.append(buf, res.ptr);
      break;
    }
    case Type::kString: out += JsonQuote(string_); break;
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
        out += JsonQuote(members_[i].first);
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

namespace {

// The line of the last non-blank character nlohmann-json's lexer has read.
// The parser reports a value as soon as its last character is read (a
// number: one character later, a delimiter on the same line or a blank), so
// at each event this is the line the value is on.
struct LineCount {
  int line = 1;
  int token_line = 1;
};

class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, LineCount* count) : p_(p), count_(count) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    if (*p_ == '\n') {
      ++count_->line;
    } else if (*p_ != ' ' && *p_ != '\t' && *p_ != '\r') {
      count_->token_line = count_->line;
    }
    ++p_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  LineCount* count_;
};

}  // namespace

// Builds a Json from nlohmann-json's SAX events; what JSON itself allows but
// gpulaunch's files do not (a repeated key, deep nesting, infinities) stops
// the parse with its own message.
class JsonParser : public nlohmann::json_sax<nlohmann::json> {
 public:
  JsonParser(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  StatusOr<Json> Document() {
    CountingIterator first(text_.data(), &count_), last(text_.data() + text_.size(), &count_);
    if (!nlohmann::json::sax_parse(first, last, this) || !error_.ok()) {
      return error_.ok() ? InvalidArgument(origin_ + ": cannot parse") : error_;
    }
    return std::move(root_);
  }

  bool null() override { return Add(Json()); }
  bool boolean(bool b) override { return Add(Json(b)); }
  bool number_integer(number_integer_t v) override { return Add(Json(static_cast<double>(v))); }
  bool number_unsigned(number_unsigned_t v) override { return Add(Json(static_cast<double>(v))); }
  bool number_float(number_float_t v, const string_t& text) override {
    if (!std::isfinite(v)) return Fail("number " + text + " is out of range");
    return Add(Json(v));
  }
  bool string(string_t& s) override { return Add(Json(std::move(s))); }
  bool binary(binary_t&) override { return Fail("binary values are not JSON text"); }
  bool start_object(std::size_t) override { return Open(Json::Object()); }
  bool start_array(std::size_t) override { return Open(Json::Array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& k) override {
    if (open_.back()->Find(k)) return Fail("key \"" + k + "\" appears twice");
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    // The offending character is the last one read: its line, and the
    // library's reason without its own "at line L, column C" prefix.
    const size_t at = std::min(text_.size(), position > 0 ? position - 1 : 0);
    const int line = 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    std::string why = e.what();
    if (const size_t column = why.find("column "); column != std::string::npos) {
      if (const size_t colon = why.find(": ", column); colon != std::string::npos) why = why.substr(colon + 2);
    } else if (const size_t bracket = why.find("] "); bracket != std::string::npos) {
      why = why.substr(bracket + 2);
    }
    error_ = InvalidArgument(origin_ + ":" + std::to_string(line) + ": " + why);
    return false;
  }

 private:
  static constexpr size_t kMaxDepth = 64;

  bool Fail(const std::string& why) {
    error_ = InvalidArgument(origin_ + ":" + std::to_string(count_.token_line) + ": " + why);
    return false;
  }
  // Places `v` where the parser is: the document, the next item of an array
  // or the member named by the last key. Returns where it now lives.
  Json* Place(Json v) {
    v.line_ = count_.token_line;
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& parent = *open_.back();
    if (parent.is(Json::Type::kArray)) {
      parent.items_.push_back(std::move(v));
      return &parent.items_.back();
    }
    parent.members_.emplace_back(std::move(key_), std::move(v));
    return &parent.members_.back().second;
  }
  bool Add(Json v) {
    Place(std::move(v));
    return true;
  }
  // A container's children are added while it is open, so `open_` points at
  // the innermost; pushing into its parent happened before, so the pointers
  // to the ones outside stay valid (a parent never grows while a child is open).
  bool Open(Json v) {
    if (open_.size() >= kMaxDepth) return Fail("nesting deeper than 64");
    open_.push_back(Place(std::move(v)));
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  std::string_view text_;
  std::string origin_;
  LineCount count_;
  Json root_;
  std::vector<Json*> open_;
  std::string key_;
  Status error_;
};

StatusOr<Json> ParseJson(std::string_view text, const std::string& origin) {
  return JsonParser(text, origin).Document();
}

}  // namespace gpulaunch
