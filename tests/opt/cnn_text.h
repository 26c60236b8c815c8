// Text-IR generators for whole CNNs with the layouts of torchvision's ResNet-50 and MobileNetV2
// (node order as torch.onnx.export emits it, Conv+BatchNormalization pairs, residual Adds), with
// seeded He-scaled weights. Used to check the pipeline and the memory plan on real topologies
// without needing an exported model on this machine.
#pragma once

#include <cmath>
#include <sstream>
#include <string>

namespace aotc {
namespace testing_util {

class CnnText {
 public:
  explicit CnnText(int batch, int64_t image) {
    os_ << "graph cnn (opset 17)\n";
    os_ << "input %image : float[" << batch << "x3x" << image << "x" << image << "]\n";
    os_ << "const %zero : float[scalar] = [0]\nconst %six : float[scalar] = [6]\n";
  }

  // Conv (no bias, as torchvision) + BatchNormalization; returns the BN output.
  std::string conv_bn(const std::string& x, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t group = 1) {
    std::string n = "c" + std::to_string(++count_);
    int64_t fan_in = cin / group * k * k;
    double a = std::sqrt(6.0 / static_cast<double>(fan_in));
    os_ << "const %" << n << "_w : float[" << cout << "x" << cin / group << "x" << k << "x" << k << "] = random("
        << seed() << ", " << -a << ", " << a << ")\n";
    os_ << "const %" << n << "_g : float[" << cout << "] = random(" << seed() << ", 0.5, 1.5)\n";
    os_ << "const %" << n << "_b : float[" << cout << "] = random(" << seed() << ", -0.2, 0.2)\n";
    os_ << "const %" << n << "_m : float[" << cout << "] = random(" << seed() << ", -0.2, 0.2)\n";
    os_ << "const %" << n << "_v : float[" << cout << "] = random(" << seed() << ", 0.5, 1.5)\n";
    int64_t p = k / 2;
    os_ << "%" << n << " : float[?] = Conv(%" << x << ", %" << n << "_w) {pads=[" << p << "," << p << "," << p
        << "," << p << "], strides=[" << stride << "," << stride << "], group=" << group << "}  # " << n << "\n";
    os_ << "%" << n << "_bn : float[?] = BatchNormalization(%" << n << ", %" << n << "_g, %" << n << "_b, %" << n
        << "_m, %" << n << "_v)\n";
    return n + "_bn";
  }
  std::string op(const std::string& op_type, const std::string& args, const std::string& attrs = "") {
    std::string n = "t" + std::to_string(++count_);
    os_ << "%" << n << " : float[?] = " << op_type << "(" << args << ")" << (attrs.empty() ? "" : " {" + attrs + "}")
        << "\n";
    return n;
  }
  // A 1x1 Conv with a bias and no BatchNormalization (squeeze-excitation's two FCs).
  std::string conv_bias(const std::string& x, int64_t cin, int64_t cout) {
    std::string n = "f" + std::to_string(++count_);
    double a = std::sqrt(6.0 / static_cast<double>(cin));
    os_ << "const %" << n << "_w : float[" << cout << "x" << cin << "x1x1] = random(" << seed() << ", " << -a << ", "
        << a << ")\n";
    os_ << "const %" << n << "_b : float[" << cout << "] = random(" << seed() << ", -0.2, 0.2)\n";
    os_ << "%" << n << " : float[?] = Conv(%" << x << ", %" << n << "_w, %" << n << "_b)  # " << n << "\n";
    return n;
  }
  std::string relu(const std::string& x) { return op("Relu", "%" + x); }
  std::string relu6(const std::string& x) { return op("Clip", "%" + x + ", %zero, %six"); }
  std::string add(const std::string& a, const std::string& b) { return op("Add", "%" + a + ", %" + b); }

  // GlobalAveragePool, Flatten, Gemm to `classes` logits; the graph output.
  void head(const std::string& x, int64_t channels, int64_t classes) {
    std::string p = op("GlobalAveragePool", "%" + x);
    std::string f = op("Flatten", "%" + p, "axis=1");
    double a = 1.0 / std::sqrt(static_cast<double>(channels));
    os_ << "const %fc_w : float[" << classes << "x" << channels << "] = random(" << seed() << ", " << -a << ", " << a
        << ")\n";
    os_ << "const %fc_b : float[" << classes << "] = random(" << seed() << ", -0.1, 0.1)\n";
    std::string y = op("Gemm", "%" + f + ", %fc_w, %fc_b", "transB=1");
    os_ << "output %" << y << "\n";
  }
  std::string text() const { return os_.str(); }

 private:
  int seed() { return ++seed_; }
  std::ostringstream os_;
  int count_ = 0, seed_ = 0;
};

// torchvision resnet50 (v1.5: stride on the 3x3 conv), widths scaled by width/64.
inline std::string resnet50_text(int batch, int64_t image, int64_t width = 64, int64_t classes = 1000) {
  CnnText b(batch, image);
  std::string x = b.relu(b.conv_bn("image", 3, width, 7, 2));
  x = b.op("MaxPool", "%" + x, "kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]");
  const int blocks[4] = {3, 4, 6, 3};
  int64_t cin = width;
  for (int layer = 0; layer < 4; ++layer) {
    int64_t planes = width << layer;
    for (int i = 0; i < blocks[layer]; ++i) {
      int64_t stride = (i == 0 && layer > 0) ? 2 : 1;
      std::string y = b.relu(b.conv_bn(x, cin, planes, 1, 1));
      y = b.relu(b.conv_bn(y, planes, planes, 3, stride));
      y = b.conv_bn(y, planes, planes * 4, 1, 1);
      std::string identity = i == 0 ? b.conv_bn(x, cin, planes * 4, 1, stride) : x;
      x = b.relu(b.add(y, identity));
      cin = planes * 4;
    }
  }
  b.head(x, cin, classes);
  return b.text();
}

// torchvision mobilenet_v2 (width multiplier 1 at width=32; ReLU6 as Clip(0, 6)).
inline std::string mobilenet_v2_text(int batch, int64_t image, int64_t width = 32, int64_t classes = 1000) {
  CnnText b(batch, image);
  auto scaled = [width](int64_t c) { return c * width / 32; };
  std::string x = b.relu6(b.conv_bn("image", 3, scaled(32), 3, 2));
  const int64_t cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                             {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t cin = scaled(32);
  for (const auto& c : cfg) {
    for (int64_t i = 0; i < c[2]; ++i) {
      int64_t stride = i == 0 ? c[3] : 1, cout = scaled(c[1]), hidden = cin * c[0];
      std::string y = x;
      if (c[0] != 1) y = b.relu6(b.conv_bn(y, cin, hidden, 1, 1));
      y = b.relu6(b.conv_bn(y, hidden, hidden, 3, stride, hidden));
      y = b.conv_bn(y, hidden, cout, 1, 1);
      x = (stride == 1 && cin == cout) ? b.add(x, y) : y;
      cin = cout;
    }
  }
  x = b.relu6(b.conv_bn(x, cin, scaled(1280), 1, 1));
  b.head(x, scaled(1280), classes);
  return b.text();
}

// MobileNetV3-style inverted residuals (hard-swish, squeeze-excitation gated by hard-sigmoid, as
// torchvision writes them), `blocks` of them at `channels`, with a stem and the head.
inline std::string squeeze_excitation_text(int batch, int64_t image, int64_t channels = 16, int blocks = 3,
                                           int64_t classes = 10) {
  CnnText b(batch, image);
  std::string x = b.op("HardSwish", "%" + b.conv_bn("image", 3, channels, 3, 2));
  for (int i = 0; i < blocks; ++i) {
    const int64_t hidden = channels * 4, squeeze = channels;
    std::string y = b.op("HardSwish", "%" + b.conv_bn(x, channels, hidden, 1, 1));
    y = b.op("HardSwish", "%" + b.conv_bn(y, hidden, hidden, 3, 1, hidden));
    std::string s = b.op("GlobalAveragePool", "%" + y);
    s = b.relu(b.conv_bias(s, hidden, squeeze));
    s = b.op("HardSigmoid", "%" + b.conv_bias(s, squeeze, hidden), "alpha=0.1666667, beta=0.5");
    y = b.op("Mul", "%" + s + ", %" + y);
    x = b.add(b.conv_bn(y, hidden, channels, 1, 1), x);
  }
  b.head(x, channels, classes);
  return b.text();
}

}  // namespace testing_util
}  // namespace aotc
