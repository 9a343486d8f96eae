#pragma once
// From what a user typed to lanes a job can run: `compare --lane 'eagle2:depth=4,head=PATH'`, `--methods a,b`,
// the global flags (--draft, --head, --gamma, ...) and the family manifest next to the target (family.json).
// Precedence: a lane's own keys, then the global flags, then the manifest. Every problem is an InputError that
// names the lane ("lane 3 (streaming)").
#include <map>
#include <string>
#include <vector>

#include "runs/job.h"

namespace specscope::runs {

struct LaneRequest {
  std::string method;
  std::map<std::string, std::string> keys;  // model, head, draft, and registry options
  std::string text;                         // as typed, for messages
};

// 'METHOD[:key=value,...]'. A comma inside a value is allowed where the next item has no '=' (branching=2,2,1).
// Throws InputError("--lane", ...) for an empty method or a key without a value.
LaneRequest parse_lane(const std::string& text);
// 'a,b,c' -> one request per method; "all" -> every method the family manifest of `target` can serve (or the
// methods that need nothing, without a manifest).
std::vector<LaneRequest> parse_method_list(const std::string& list, const std::string& target);

// The CLI's global flags, or the app's settings.
struct LaneDefaults {
  std::string target;                         // --model (or the embedded default)
  std::string draft, head;                    // --draft, --head: every lane whose method needs one
  std::map<std::string, std::string> options; // method option flags: every lane whose method takes them
  bool use_manifest = true;
};

std::vector<Lane> resolve_lanes(const std::vector<LaneRequest>& requests, const LaneDefaults& defaults);

// "lane 2 (eagle2:depth=4)", for messages.
std::string lane_name(int index, const std::string& text);

}  // namespace specscope::runs
