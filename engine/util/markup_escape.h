#pragma once
// Text made safe inside HTML, SVG and XML markup, the way Jinja's escape (markupsafe) writes it: & < > " ' as
// &amp; &lt; &gt; &#34; &#39;. One escaper for the chat templates' `escape` filter (whose output must match
// transformers' byte for byte), the HTML session export and the tree inspector's SVG export; numeric references
// are valid in all three.
#include <string>
#include <string_view>

namespace specscope {

inline std::string markup_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace specscope
