#pragma once
// Ties every view to the app's one StepFocus (ui/engine/step_focus.h), as a profiler links its views: the
// inspectors' timelines write the step shown and the range selected; the chat's tokens, the compare lanes'
// positions and the statistics' points ask for a step to be opened; the statistics filter to the range; and an
// opened step is shown by the inspector that holds its lane (the Chat tab's for a chat, the Compare tab's lane
// inspector for a race), whose tab comes to the front.
#include <string>

namespace specscope::ui {

class MainWindow;
class PresenterMode;
class StepFocus;

void link_views(MainWindow& window, StepFocus& focus);
// The replayed session's notes (or none: ""), parsed once, to every place that shows them.
void show_session_notes(MainWindow& window, PresenterMode& presenter, const std::string& notes);

}  // namespace specscope::ui
