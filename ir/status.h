// Status and Expected<T>: how every fallible step in aotc reports a problem.
// Library code never exits, aborts or throws across module boundaries; it returns a Status whose
// message is one line naming the node, op and reason (see node_error), and the CLI prints it.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace aotc {

class Status {
 public:
  static Status ok() { return Status(); }
  static Status error(std::string message) { return Status(std::move(message)); }

  bool is_ok() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  Status() = default;
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

// A value or the Status explaining why there is none.
template <class T>
class Expected {
 public:
  Expected(T value) : data_(std::move(value)) {}             // NOLINT: implicit by design
  Expected(Status status) : data_(std::move(status)) {}      // NOLINT: must be an error
  bool is_ok() const { return data_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() { return std::get<0>(data_); }
  const T& value() const { return std::get<0>(data_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Status status() const { return is_ok() ? Status::ok() : std::get<1>(data_); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace aotc

// Propagate a failed Status from an expression that yields Status.
#define AOTC_RETURN_IF_ERROR(expr)              \
  do {                                          \
    ::aotc::Status aotc_status_ = (expr);       \
    if (!aotc_status_.is_ok()) return aotc_status_; \
  } while (0)
