#include "tuner/store/table_entries.hpp"

#include <utility>
#include <vector>

#include "runtime/table.hpp"

namespace moe::tuner {

using ojson = nlohmann::ordered_json;

// Events of one pass over a table's text: the root's "schema" is noted, each value of its
// "entries" object is built as its own small JSON value and handed to the map, and everything
// else is passed over without being kept.
class EntriesReader : public nlohmann::json_sax<ojson> {
 public:
  explicit EntriesReader(TableEntries& into) : into_(into) {}

  std::string schema;
  bool saw_entries = false;
  std::string fault;  // the first entry that is not a token count's object
  std::string syntax;  // the parser's complaint

  bool null() override { return value(ojson()); }
  bool boolean(bool v) override { return value(ojson(v)); }
  bool number_integer(number_integer_t v) override { return value(ojson(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(ojson(v)); }
  bool number_float(number_float_t v, const string_t&) override { return value(ojson(v)); }
  bool string(string_t& v) override {
    if (depth_ == 1 && key_ == "schema") schema = v;
    return value(ojson(std::move(v)));
  }
  bool binary(binary_t& v) override { return value(ojson::binary(v)); }
  bool start_object(std::size_t) override { return open(ojson::object()); }
  bool start_array(std::size_t) override { return open(ojson::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (!building_.empty()) {
      member_ = std::move(k);
    } else if (in_entries()) {
      tokens_ = runtime::token_count_key(k);
      if (tokens_ < 1 && fault.empty()) fault = "has an entry keyed '" + k.substr(0, 40) + "', which is not a token count";
      entry_key_ = std::move(k);
    } else {
      key_ = std::move(k);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    syntax = e.what();
    return false;
  }

 private:
  bool in_entries() const { return depth_ == 2 && entries_open_; }

  // A value inside an entry goes where the entry being built says; an entry that is no object
  // is a fault; anything else is not kept.
  bool value(ojson v) {
    if (!building_.empty()) {
      place(std::move(v));
    } else if (in_entries() && fault.empty()) {
      fault = "has an entry keyed '" + entry_key_.substr(0, 40) + "' that is not an object";
    }
    return true;
  }
  ojson* place(ojson v) {
    ojson& parent = *building_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    ojson& slot = parent[member_];
    slot = std::move(v);
    return &slot;
  }
  bool open(ojson container) {
    if (!building_.empty()) {
      building_.push_back(place(std::move(container)));
    } else if (in_entries()) {
      if (container.is_object()) {
        entry_ = std::move(container);
        building_.push_back(&entry_);
      } else if (fault.empty()) {
        fault = "has an entry keyed '" + entry_key_.substr(0, 40) + "' that is not an object";
      }
    } else if (depth_ == 1 && key_ == "entries" && container.is_object()) {
      entries_open_ = saw_entries = true;
      into_.entries_.clear();  // a repeated key: the last one counts, as parsing into a value would have it
    }
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    if (!building_.empty()) {
      building_.pop_back();
      if (building_.empty() && tokens_ >= 1) into_.put_in_order(tokens_, std::move(entry_));
    } else if (depth_ == 1 && entries_open_) {
      entries_open_ = false;
    }
    return true;
  }

  TableEntries& into_;
  int depth_ = 0;            // containers open around the next event; the root object is 1
  std::string key_;          // the root's key being read
  bool entries_open_ = false;
  std::string entry_key_;
  std::int64_t tokens_ = -1;  // entry_key_ as a token count
  ojson entry_;
  std::vector<ojson*> building_;  // the entry and the containers open inside it
  std::string member_;            // the key of the next value in the innermost open object
};

std::string TableEntries::read(const std::string& text) {
  entries_.clear();
  EntriesReader r(*this);
  const bool parsed = ojson::sax_parse(text, &r);
  std::string why;
  if (!parsed) why = "is not valid JSON (" + r.syntax + ")";
  else if (r.schema != runtime::kTableSchema) why = std::string("is not a ") + runtime::kTableSchema + " table";
  else if (!r.saw_entries) why = "has no entries object";
  else why = r.fault;
  if (!why.empty()) entries_.clear();
  return why;
}

void TableEntries::put(std::int64_t tokens, ojson entry) { entries_.insert_or_assign(tokens, std::move(entry)); }

// A table as written lists its keys in order: the hint makes each of them one comparison or two.
void TableEntries::put_in_order(std::int64_t tokens, ojson entry) {
  entries_.insert_or_assign(entries_.end(), tokens, std::move(entry));
}

ojson TableEntries::take_json() {
  // Appended to the object's vector directly: its operator[] would look every key up again.
  ojson::object_t object;
  auto& items = static_cast<ojson::object_t::Container&>(object);
  items.reserve(entries_.size());
  for (auto& [tokens, entry] : entries_) items.emplace_back(std::to_string(tokens), std::move(entry));
  entries_.clear();
  return ojson(std::move(object));
}

}  // namespace moe::tuner
