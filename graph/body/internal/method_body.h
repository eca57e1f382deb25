// SPDX-License-Identifier: Apache-2.0
// MethodBody: a method's stages (a method given as one fn is one unnamed
// stage) and their segments: each maximal run of non-eager stages is a
// piece, captured as one graph; each eager stage is a segment of its own,
// run eagerly on every call between the pieces around it. Pure logic.
#ifndef ENCORE_GRAPH_BODY_INTERNAL_METHOD_BODY_H_
#define ENCORE_GRAPH_BODY_INTERNAL_METHOD_BODY_H_

#include <cstddef>
#include <string>
#include <vector>

#include "encore/graph/method_spec.h"

namespace encore {

struct Segment {
  size_t first = 0;  // stages [first, last)
  size_t last = 0;
  bool piece = true;   // else one eager stage
  size_t index = 0;    // a piece's number among the pieces
};

class MethodBody {
 public:
  // The spec's stages, or its fn as one unnamed stage.
  static MethodBody Of(const MethodSpec& spec);
  explicit MethodBody(std::vector<Stage> stages);

  const std::vector<Stage>& stages() const { return stages_; }
  const std::vector<Segment>& segments() const { return segments_; }
  size_t pieces() const { return pieces_; }
  // The names of a segment's stages.
  std::vector<std::string> StageNames(const Segment& s) const;

 private:
  std::vector<Stage> stages_;
  std::vector<Segment> segments_;
  size_t pieces_ = 0;
};

}  // namespace encore

#endif  // ENCORE_GRAPH_BODY_INTERNAL_METHOD_BODY_H_
