#pragma once
// The JSON type each field of a journal line or a results file must have when it is present.
// Readers take fields with json::value and json::get, which throw on another type: a file that
// was edited or written by something else is checked here once, when it is read, so it is the
// user's error naming the field (exit 2), never an internal one.
#include <string>

#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

enum class FieldSet {
  journal_line,  // header, prep, eval and point lines
  record,        // results.json records[i]
  point,         // results.json points[i], with its winner, runner-up, default and chosen
  meta,          // results.json meta
};

// "tokens is \"4\", not an integer" for the first field of `obj` of a wrong type; "" when none
// (also when `obj` is not an object: the caller says so).
std::string field_type_fault(const json& obj, FieldSet set);

}  // namespace moe::tuner
