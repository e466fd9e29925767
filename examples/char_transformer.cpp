// A small character-level GPT: byte embeddings plus learned positions, a causal
// TransformerEncoder and a linear head, trained on a text file to predict the next byte.
//
//   build/examples/char_transformer [--text PATH] [--steps N] [--seq L] [--batch B] [--d-model D]
//                                   [--layers N] [--seed S] [--precision f32|bf16] [--help]
//
// Without --text it uses the King James Bible from Debian (apt-get install bible-kjv; the
// text is produced with `bible Gen1:1-Rev22:21 </dev/null` and cached in /tmp), and falls back
// to a short built-in text when that is not installed. It prints validation bits per character
// and a sample; the last line is `key=value` pairs: val_bpc=... With --precision bf16 the
// forward passes and the loss run under an AutocastGuard (bf16 matrix products; parameters,
// gradients and the optimiser stay f32), which is faster on CPUs with AVX512_BF16.

#include <ember/nn.hpp>
#include <ember/optim.hpp>

#include "cli.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

using namespace ember;

namespace {

struct Args {
  std::string text;
  int steps = 300;
  int seq = 64;
  int batch = 16;
  int d_model = 128;
  int layers = 2;
  uint64_t seed = 3;
  std::string precision = "f32";
};

Args parse(int argc, char** argv) {
  Args a;
  ember_examples::Cli("char_transformer", "Trains a character-level causal Transformer; prints val_bpc and a sample.")
      .flag("--text", a.text, "PATH", "training text (default: the King James Bible, if installed)")
      .flag("--steps", a.steps, "N", "optimiser steps", 0)
      .flag("--seq", a.seq, "L", "context length in bytes", 1)
      .flag("--batch", a.batch, "B", "windows per step", 1)
      .flag("--d-model", a.d_model, "D", "model width (a multiple of the 4 heads)", 4)
      .flag("--layers", a.layers, "N", "Transformer layers", 1)
      .flag("--seed", a.seed, "S", "seed of the batches and the weights")
      .flag("--precision", a.precision, "P", "f32, or bf16 for mixed precision (ember::AutocastGuard)")
      .parse(argc, argv);
  if (a.precision != "f32" && a.precision != "bf16") {
    std::fprintf(stderr, "--precision must be f32 or bf16, got '%s'\n", a.precision.c_str());
    std::exit(2);
  }
  return a;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// The corpus: --text, else the cached or freshly produced KJV, else a built-in passage.
std::string load_corpus(const Args& a) {
  if (!a.text.empty()) {
    std::string t = read_file(a.text);
    if (t.empty()) {
      std::fprintf(stderr, "cannot read %s\n", a.text.c_str());
      std::exit(1);
    }
    return t;
  }
  const std::string cache = "/tmp/ember_kjv.txt";
  std::string t = read_file(cache);
  if (t.size() > 1000000) return t;
  if (std::system("command -v bible >/dev/null 2>&1") == 0 &&
      std::system(("bible Gen1:1-Rev22:21 </dev/null > " + cache + ".part 2>/dev/null && mv " + cache + ".part " + cache)
                      .c_str()) == 0) {
    t = read_file(cache);
    if (t.size() > 1000000) return t;
  }
  std::fprintf(stderr,
               "note: the King James Bible is not installed (apt-get install bible-kjv); training on a short "
               "built-in text instead (one passage repeated: val_bpc then measures recall, not generalisation)\n");
  std::string base =
      "In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
      "darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. And God "
      "said, Let there be light: and there was light. And God saw the light, that it was good: and God divided the "
      "light from the darkness. ";
  std::string out;
  while (out.size() < 200000) out += base;
  return out;
}

struct GptImpl : nn::Module {
  GptImpl(int d_model, int heads, int layers, int context) : nn::Module("Gpt") {
    tok = register_module("tok", nn::Embedding(256, d_model));
    pos = register_module("pos", nn::Embedding(context, d_model));
    auto layer = nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(d_model, heads)
                                                 .dim_feedforward(4 * d_model)
                                                 .dropout(0.0)
                                                 .batch_first(true)
                                                 .norm_first(true)
                                                 .activation("gelu"));
    blocks = register_module("blocks",
                             nn::TransformerEncoder(layer, layers, nn::LayerNorm(nn::LayerNormOptions({d_model}))));
    head = register_module("head", nn::Linear(d_model, 256));
  }
  /// tokens (B, L) -> logits (B, L, 256)
  Tensor forward(const Tensor& tokens) {
    Tensor positions = arange(tokens.size(1));
    Tensor h = tok(tokens) + pos(positions);
    return head(blocks->forward(h, {}, {}, true));
  }
  nn::Embedding tok{nullptr}, pos{nullptr};
  nn::TransformerEncoder blocks{nullptr};
  nn::Linear head{nullptr};
};
EMBER_MODULE(Gpt);

/// Random windows of `len + 1` bytes from [lo, hi): inputs and next-byte targets.
std::pair<Tensor, Tensor> batch(const std::string& text, size_t lo, size_t hi, int n, int len, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> start(lo, hi - len - 1);
  Tensor x = empty({n, len}, DType::I64), y = empty({n, len}, DType::I64);
  int64_t* xp = x.data_ptr<int64_t>();
  int64_t* yp = y.data_ptr<int64_t>();
  for (int b = 0; b < n; ++b) {
    size_t s = start(rng);
    for (int i = 0; i < len; ++i) {
      xp[b * len + i] = static_cast<unsigned char>(text[s + i]);
      yp[b * len + i] = static_cast<unsigned char>(text[s + i + 1]);
    }
  }
  return {x, y};
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  return ember_examples::run_main("char_transformer", [&] {
    manual_seed(args.seed);
    std::mt19937_64 rng(args.seed);
    std::string text = load_corpus(args);
    size_t split = text.size() * 9 / 10;  // the last tenth is held out
    std::printf("corpus: %zu bytes\n", text.size());
    // Windows of seq + 1 bytes are drawn from both parts.
    const size_t window = static_cast<size_t>(args.seq) + 1;
    if (split < window || text.size() - split < window) {
      std::fprintf(stderr, "char_transformer: a text of %zu bytes is too short for --seq %d: its last tenth is held "
                   "out, and each part needs at least %zu bytes\n", text.size(), args.seq, window);
      return 1;
    }

    Gpt model(args.d_model, 4, args.layers, args.seq);
    const bool bf16 = args.precision == "bf16";
    optim::AdamW opt(model->parameters(), optim::AdamWOptions(3e-3).weight_decay(0.01));
    for (int step = 1; step <= args.steps; ++step) {
      auto [x, y] = batch(text, 0, split, args.batch, args.seq, rng);
      opt.zero_grad();
      Tensor loss;
      {
        AutocastGuard autocast(DType::BF16, bf16);  // off for f32: a no-op scope
        loss = nn::F::cross_entropy(model(x).reshape({-1, 256}), y.reshape({-1}));
      }
      loss.backward();
      nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      opt.step();
      if (step % 50 == 0) std::printf("step %4d  train_bpc %.3f\n", step, loss.item<double>() / std::log(2.0));
    }
    model->eval();
    autograd::NoGradGuard ng;
    AutocastGuard autocast(DType::BF16, bf16);  // evaluation and sampling as trained
    double val = 0;
    for (int i = 0; i < 8; ++i) {
      auto [x, y] = batch(text, split, text.size(), args.batch, args.seq, rng);
      val += nn::F::cross_entropy(model(x).reshape({-1, 256}), y.reshape({-1})).item<double>();
    }
    double bpc = val / 8 / std::log(2.0);
    // Sample 200 bytes, feeding the last `seq` bytes back in.
    std::string sample = text.substr(split, 16);
    std::uniform_real_distribution<double> u(0, 1);
    for (int i = 0; i < 200; ++i) {
      size_t n = std::min<size_t>(sample.size(), static_cast<size_t>(args.seq));
      Tensor ctx = empty({1, static_cast<int64_t>(n)}, DType::I64);
      for (size_t j = 0; j < n; ++j) ctx.data_ptr<int64_t>()[j] = static_cast<unsigned char>(sample[sample.size() - n + j]);
      Tensor p = (model(ctx).select(1, static_cast<int64_t>(n) - 1).select(0, 0) / 0.8).softmax(0).contiguous();
      double r = u(rng), acc = 0;
      int c = 255;
      for (int k = 0; k < 256; ++k)
        if ((acc += p.data_ptr<float>()[k]) >= r) {
          c = k;
          break;
        }
      sample.push_back(static_cast<char>(c));
    }
    std::printf("sample: %s\n", sample.c_str());
    std::printf("steps=%d seq=%d layers=%d precision=%s val_bpc=%.3f\n", args.steps, args.seq, args.layers,
                args.precision.c_str(), bpc);
    return 0;
  });
}
