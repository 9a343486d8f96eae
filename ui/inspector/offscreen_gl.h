#pragma once
// OpenGL off screen: a context, a surface it can be current on, and a framebuffer object read back as a QImage
// that a plain QWidget paints. The inspector draws through this rather than being a QOpenGLWidget because a
// QOpenGLWidget anywhere in a window makes Qt compose the whole window with OpenGL on every repaint of any of
// its widgets: with software OpenGL (Mesa llvmpipe) each update of the streaming chat text then cost about
// 18 ms of rasterizer threads on the decoder's cores, against nothing for a raster window (issue 18; measured
// with bench/gui_bench). Here only an inspector frame uses OpenGL, and a text update is a raster repaint.
#include <QImage>
#include <QSize>
#include <memory>

class QOffscreenSurface;
class QOpenGLContext;
class QOpenGLFramebufferObject;

namespace specscope::ui {

class OffscreenGl {
 public:
  OffscreenGl();
  ~OffscreenGl();
  OffscreenGl(const OffscreenGl&) = delete;
  OffscreenGl& operator=(const OffscreenGl&) = delete;

  bool create();  // the default surface format's context; false when there is no OpenGL
  bool valid() const;
  QOpenGLContext* context() const { return ctx_.get(); }
  bool makeCurrent();
  void doneCurrent();
  // Binds a framebuffer of `pixels` (device pixels; made anew when the size changes) and sets the viewport.
  // The context must be current.
  bool bind(const QSize& pixels);
  QImage read() const;  // the bound framebuffer, top row first

 private:
  std::unique_ptr<QOpenGLContext> ctx_;
  std::unique_ptr<QOffscreenSurface> surface_;
  std::unique_ptr<QOpenGLFramebufferObject> fbo_;
};

}  // namespace specscope::ui
