// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/body/internal/method_body.h"

#include <set>
#include <utility>

#include "encore/graph/internal/messages.h"

namespace encore {

Status ValidateMethodBody(const MethodSpec& spec) {
  const std::string who = MethodQuoted(spec.name);
  if (spec.fn && !spec.stages.empty()) {
    return InvalidArgumentError("Register: " + who + " has both fn and stages; give one");
  }
  if (!spec.fn && spec.stages.empty()) return InvalidArgumentError("Register: " + who + " has no fn");
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    const Stage& s = spec.stages[i];
    if (s.name.empty()) return InvalidArgumentError("Register: " + who + ": stage " + std::to_string(i) + " has no name");
    if (!names.insert(s.name).second) {
      return InvalidArgumentError("Register: " + who + ": stage name '" + s.name + "' is used twice");
    }
    if (!s.fn) return InvalidArgumentError("Register: " + who + ": stage '" + s.name + "' has no fn");
  }
  return OkStatus();
}

MethodBody MethodBody::Of(const MethodSpec& spec) {
  if (!spec.stages.empty()) return MethodBody(spec.stages);
  return MethodBody({Stage{std::string(), spec.fn, false}});
}

MethodBody::MethodBody(std::vector<Stage> stages) : stages_(std::move(stages)) {
  for (size_t i = 0; i < stages_.size(); ++i) {
    if (stages_[i].eager) {
      segments_.push_back(Segment{i, i + 1, false, 0});
    } else if (!segments_.empty() && segments_.back().piece) {
      segments_.back().last = i + 1;
    } else {
      segments_.push_back(Segment{i, i + 1, true, pieces_++});
    }
  }
}

std::vector<std::string> MethodBody::StageNames(const Segment& s) const {
  std::vector<std::string> names;
  for (size_t i = s.first; i < s.last; ++i) names.push_back(stages_[i].name);
  return names;
}

}  // namespace encore
