// Strong integer types: an id, a GPU count and a time cannot be mixed up by accident.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace hg {

template <class Tag, class Rep>
class Strong {
 public:
  using rep = Rep;
  constexpr Strong() = default;
  constexpr explicit Strong(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }

  constexpr auto operator<=>(const Strong&) const = default;
  constexpr bool operator==(const Strong&) const = default;

  constexpr Strong operator+(Strong o) const { return Strong(static_cast<Rep>(v_ + o.v_)); }
  constexpr Strong operator-(Strong o) const { return Strong(static_cast<Rep>(v_ - o.v_)); }
  constexpr Strong& operator+=(Strong o) {
    v_ = static_cast<Rep>(v_ + o.v_);
    return *this;
  }
  constexpr Strong& operator-=(Strong o) {
    v_ = static_cast<Rep>(v_ - o.v_);
    return *this;
  }
  constexpr Strong operator*(Rep k) const { return Strong(static_cast<Rep>(v_ * k)); }
  constexpr Strong operator/(Rep k) const { return Strong(static_cast<Rep>(v_ / k)); }

  friend std::ostream& operator<<(std::ostream& os, Strong s) { return os << +s.v_; }

 private:
  Rep v_{};
};

}  // namespace hg

template <class Tag, class Rep>
struct std::hash<hg::Strong<Tag, Rep>> {
  size_t operator()(hg::Strong<Tag, Rep> s) const noexcept { return std::hash<Rep>{}(s.value()); }
};
