#pragma once
// The race's shared cursor: one position in the generated text (token 0..n-1) for every lane at once. Lanes
// take different numbers of steps for the same text, so the text position, not the step, is the axis they
// share; each lane then shows the step that produced the token under the cursor (TraceStore::step_at_token).
// "Live" follows the newest steps instead; moving the cursor leaves live.
#include <QWidget>

class QLabel;
class QSlider;
class QPushButton;

namespace specscope::ui {

class RaceCursor : public QWidget {
  Q_OBJECT
 public:
  explicit RaceCursor(QWidget* parent = nullptr);
  void setTokenCount(int tokens);  // the longest lane's generated tokens so far
  int tokenCount() const { return tokens_; }
  int token() const;               // -1 when live
  bool live() const { return live_; }
  void setToken(int token);        // leaves live and emits tokenChanged
  void setLive(bool live);         // emits liveChanged
  void reset();                    // live, no tokens (a new race)

 signals:
  void tokenChanged(int token);
  void liveChanged(bool live);

 private:
  void update_label();
  QSlider* slider_;
  QLabel* label_;
  QPushButton* live_button_;
  int tokens_ = 0;
  bool live_ = true;
};

}  // namespace specscope::ui
