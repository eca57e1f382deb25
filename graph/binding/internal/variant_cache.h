// SPDX-License-Identifier: Apache-2.0
// VariantCache: the executables of one graph, each bound to one set of
// caller addresses, staged and direct graphs alike. A call whose addresses
// match an executable launches it with no rewrite; an address set seen twice
// earns an executable of its own, instantiated with its addresses written
// into the graph first; a set seen once rewrites the least recently used
// executable, preferring one rewritten before.
//
// Why executables and not rewrites (bench/binding_micro, H200): switching
// executables costs nothing measurable, while a rewrite costs the host
// about 0.45 us a node, and an executable rewritten before its first
// launch runs slower from then on (a 128-kernel graph 1.2-1.3x end to end;
// after a launch a rewrite leaves it at full speed: bench/stages_micro's
// exec_forms variants, docs/performance.md). So a recurring set answered by a rewritten
// executable gets a clean one.
//
// Generic over the executable type so that its rules are tested without a
// GPU (variant_cache_test.cc); the graph form (StagedForm, DirectForm) makes
// and rewrites the executables.
#ifndef ENCORE_GRAPH_BINDING_INTERNAL_VARIANT_CACHE_H_
#define ENCORE_GRAPH_BINDING_INTERNAL_VARIANT_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "encore/core/status.h"
#include "encore/graph/binding/internal/address_set.h"

namespace encore {

template <class Exec, class Extra>
struct ExecVariant {
  Exec exec;
  Addresses bound;  // what its nodes point at
  uint64_t key = 0;
  int64_t last_use = 0;
  bool rewritten = false;  // a node was rewritten after instantiation
  Extra extra{};
};

// How one form of a graph makes and rewrites executables.
template <class Exec, class Extra>
class VariantForm {
 public:
  using Variant = ExecVariant<Exec, Extra>;
  // Whether the form can take these tensors at all (else the caller falls
  // back to another form); asked only for addresses no executable holds.
  virtual bool Accepts(Args inputs, Args outputs, uint64_t key) = 0;
  // A new executable of the graph with `to` written into its nodes first.
  virtual StatusOr<Exec> Instantiate(const Addresses& to) = 0;
  // Points v's nodes at `to` where v.bound says they point elsewhere,
  // setting v.rewritten when it changed a node. On failure the cache
  // forgets what v is bound to.
  virtual Status Rewrite(Variant& v, const Addresses& to, uint64_t key) = 0;

 protected:
  ~VariantForm() = default;
};

template <class Exec, class Extra>
class VariantCache {
 public:
  using Variant = ExecVariant<Exec, Extra>;
  using Form = VariantForm<Exec, Extra>;

  explicit VariantCache(size_t max_variants = 1) : max_(max_variants < 1 ? 1 : max_variants) {}

  // The first executable, bound to `bound` (made at capture).
  void Add(Exec exec, Addresses bound, Extra extra = {}) {
    const uint64_t key = AddressKey(bound);
    variants_.push_back(Variant{std::move(exec), std::move(bound), key, 0, false, std::move(extra)});
    mru_ = variants_.size() - 1;
  }
  bool empty() const { return variants_.empty(); }
  size_t size() const { return variants_.size(); }
  Variant& at(size_t i) { return variants_[i]; }
  Variant& mru() { return variants_[mru_]; }
  size_t max_variants() const { return max_; }

  // The executable bound to these addresses (found, made or rewritten), or
  // null when the form does not accept them. Counted in binds() and
  // rewrite_calls() unless `counted` is false (the capture's probe binds
  // encore's snapshots, which say nothing of the caller's addresses).
  StatusOr<Variant*> Bind(Args inputs, Args outputs, Form& form, int64_t* new_variants, bool counted = true) {
    if (!counted) return BindUncounted(inputs, outputs, form);
    ++binds_;
    Variant& last = variants_[mru_];
    // The replay path: the last call's addresses on a clean executable (or
    // no room for one).
    if (!SameAddresses(last.bound, inputs, outputs) || (last.rewritten && variants_.size() < max_)) {
      StatusOr<size_t> vi = Choose(inputs, outputs, form, new_variants);
      if (!vi.ok()) return vi.status();
      if (*vi == variants_.size()) return static_cast<Variant*>(nullptr);
      mru_ = *vi;
    }
    variants_[mru_].last_use = binds_;
    return &variants_[mru_];
  }

  // Whether the last Bind's executable is what a Bind of the same addresses
  // returns again with no work: clean, or no room for a clean one.
  bool Settled() const { return !variants_[mru_].rewritten || variants_.size() >= max_; }
  // The last Bind's executable when it is bound to these addresses and
  // Settled, else null (the replay path holds it: Note [replay path],
  // graph/runtime/replay.cc). Changes nothing.
  const Variant* Held(Args inputs, Args outputs) const {
    if (variants_.empty() || !SameAddresses(variants_[mru_].bound, inputs, outputs) || !Settled()) return nullptr;
    return &variants_[mru_];
  }

  // Binds that had to rewrite an executable, and all binds counted.
  int64_t binds() const { return binds_; }
  int64_t rewrite_calls() const { return rewrite_calls_; }

 private:
  StatusOr<size_t> Choose(Args inputs, Args outputs, Form& form, int64_t* new_variants) {
    const uint64_t key = AddressSetKey(inputs, outputs);
    // From the one after the last call's: buffers that rotate come back in
    // the order their executables were made, so the first look hits.
    size_t vi = FindFrom(mru_ + 1, variants_.size(), [&](size_t i) {
      return variants_[i].key == key && SameAddresses(variants_[i].bound, inputs, outputs);
    });
    if (vi < variants_.size()) {
      if (!variants_[vi].rewritten) return vi;
      const size_t clean = Make(key, inputs, outputs, form, new_variants);
      if (clean == variants_.size()) return vi;
      Forget(variants_[vi]);  // left for sets seen once
      return clean;
    }
    if (!form.Accepts(inputs, outputs, key)) return variants_.size();
    vi = missed_.Recurs(key) ? Make(key, inputs, outputs, form, new_variants) : variants_.size();
    if (vi < variants_.size()) return vi;
    ++rewrite_calls_;
    vi = ToRewrite();
    Variant& v = variants_[vi];
    const Addresses to = AddressesOf(inputs, outputs);
    if (Status s = form.Rewrite(v, to, key); !s.ok()) {
      Forget(v);
      return s;
    }
    v.bound = to;
    v.key = key;
    return vi;
  }

  // A new executable for `key`, or size() at the cap or on failure (then
  // the cap comes down to what exists, so a failing instantiation is not
  // retried on every call).
  size_t Make(uint64_t key, Args inputs, Args outputs, Form& form, int64_t* new_variants) {
    if (variants_.size() >= max_) return variants_.size();
    Addresses to = AddressesOf(inputs, outputs);
    StatusOr<Exec> exec = form.Instantiate(to);
    if (!exec.ok()) {
      max_ = variants_.size();
      return variants_.size();
    }
    variants_.push_back(Variant{*std::move(exec), std::move(to), key, 0, false, Extra{}});
    if (new_variants != nullptr) ++*new_variants;
    return variants_.size() - 1;
  }

  // The least recently used executable among those rewritten before (they
  // are slower already), else among all.
  size_t ToRewrite() const {
    size_t pick = variants_.size();
    for (bool rewritten_only : {true, false}) {
      for (size_t i = 0; i < variants_.size(); ++i) {
        if (rewritten_only && !variants_[i].rewritten) continue;
        if (pick == variants_.size() || variants_[i].last_use < variants_[pick].last_use) pick = i;
      }
      if (pick < variants_.size()) return pick;
    }
    return 0;
  }

  static void Forget(Variant& v) {
    v.key = 0;
    v.bound.assign(v.bound.size(), nullptr);
  }

  StatusOr<Variant*> BindUncounted(Args inputs, Args outputs, Form& form) {
    const int64_t binds = binds_, rewrite_calls = rewrite_calls_;
    const MissRing missed = missed_;
    int64_t made = 0;
    StatusOr<Variant*> v = Bind(inputs, outputs, form, &made, /*counted=*/true);
    binds_ = binds;
    rewrite_calls_ = rewrite_calls;
    missed_ = missed;
    return v;
  }

  std::vector<Variant> variants_;  // in the order they were made
  size_t mru_ = 0;                 // the last call's
  size_t max_;
  int64_t binds_ = 0;
  int64_t rewrite_calls_ = 0;
  MissRing missed_;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_BINDING_INTERNAL_VARIANT_CACHE_H_
