// SPDX-License-Identifier: Apache-2.0
// Scope: what a method body that runs PyTorch code needs around that code.
#ifndef ENCORE_INTEROP_TORCH_SCOPE_H_
#define ENCORE_INTEROP_TORCH_SCOPE_H_

#include <exception>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "encore/core/status.h"
#include "encore/graph/call.h"

namespace encore::torch {

struct ScopeOptions {
  // Routes PyTorch's caching allocator to the capture's private pool. Off
  // only to show what goes wrong without it (tests); the environment
  // variable ENCORE_TORCH_ROUTE_ALLOCATOR=0 turns it off for every Scope.
  bool route_allocator = true;
};

// Inside a method body:
//
//   ENCORE_ASSIGN_OR_RETURN(encore::torch::Scope scope, encore::torch::Scope::Enter(call));
//   return scope.Run([&] { ...ATen ops on call.stream()... });
//
// Enter makes call.stream() PyTorch's current stream (and the call's device
// current). During a capture it also routes PyTorch's caching allocator on
// that device to a private pool for allocations on the capture's stream, and
// ties the pool to the graph (Call::KeepWithGraph): memory the graph uses is
// never handed to another tensor while the graph lives. Destruction restores
// both. A capture that cannot be made safe is refused (a capture refusal,
// so the method runs eagerly): PyTorch's cudaMallocAsync backend or any
// allocator but its native one.
class Scope {
 public:
  [[nodiscard]] static StatusOr<Scope> Enter(Call& call);
  [[nodiscard]] static StatusOr<Scope> Enter(Call& call, const ScopeOptions& options);

  Scope(Scope&& other) noexcept;
  Scope& operator=(Scope&& other) noexcept;
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope();

  // Whether allocations go to a private pool (a capture, routing on).
  bool routed() const;
  int device() const;

  // Runs `fn` (returning void or Status); a PyTorch (or any) exception
  // becomes a Status, never an exception through encore. During a capture,
  // an error that says the operation cannot be captured (or one after which
  // the capture is no longer active) is a capture refusal, so the method
  // falls back to eager calls: a `.item()`, torch's random numbers.
  template <class F>
  Status Run(F&& fn) {
    try {
      if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
        fn();
        return OkStatus();
      } else {
        return fn();
      }
    } catch (...) {
      return FromException(std::current_exception());
    }
  }

  // The Status of an exception thrown in this scope's call, as Run makes it.
  Status FromException(std::exception_ptr e) const;

 private:
  struct State;
  explicit Scope(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace encore::torch

#endif  // ENCORE_INTEROP_TORCH_SCOPE_H_
