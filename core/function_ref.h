// A non-owning reference to a callable, for callbacks asked many times inside one call: a
// preemption plan asks its `eligible` of every job on every node it visits, a reservation its
// `ready_at` of every node, in most cycles. std::function would copy the caller's lambda and
// call it through its own indirection; this is one pointer to the lambda and one to a thunk.
// The callable must outlive the FunctionRef, so take one only as a parameter. It must be an object
// (a lambda, a function pointer): a bare function's name does not convert.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace hg {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  // Implicit, as std::function's is: callers pass a lambda where a FunctionRef is asked for.
  template <typename F,
            typename = std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
                                        std::is_object_v<std::remove_reference_t<F>> &&
                                        std::is_invocable_r_v<R, F&, Args...>>>
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor)
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* obj, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(obj))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

}  // namespace hg
