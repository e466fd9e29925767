// One builder per module type of the PyTorch golden fixture (tools/gen_nn_golden.py): it makes
// the Ember module with the case's options (PyTorch's argument names and defaults) and says how
// to call it with the case's named inputs. Option and input helpers are at the end.

#include "golden.hpp"

#include <cstdlib>
#include <stdexcept>

namespace ember::nn_golden {

namespace {

using IntArgs = std::vector<int64_t>;
using Outs = std::vector<Tensor>;

Shape shape_of(const IntArgs& v) {
  Shape s;
  for (int64_t x : v) s.push_back(x);
  return s;
}

/// A module called as m(input).
template <class H>
Built one(H m) {
  return {m.ptr(), [m](Inputs& in) { return Outs{m(in["input"])}; }};
}

template <class H>
Built conv(Opts& o) {
  nn::ConvOptions co(o.i("in_channels"), o.i("out_channels"), o.ints("kernel_size"));
  co.stride(o.ints("stride", IntArgs{1}))
      .dilation(o.ints("dilation", IntArgs{1}))
      .groups(o.i("groups", 1))
      .bias(o.b("bias", true))
      .padding_mode(o.s("padding_mode", "zeros"));
  if (o.is_word("padding")) co.padding_str(o.s("padding"));
  else co.padding(o.ints("padding", IntArgs{0}));
  return one(H(co));
}

template <class H>
Built conv_transpose(Opts& o) {
  nn::ConvTransposeOptions co(o.i("in_channels"), o.i("out_channels"), o.ints("kernel_size"));
  co.stride(o.ints("stride", IntArgs{1}))
      .padding(o.ints("padding", IntArgs{0}))
      .output_padding(o.ints("output_padding", IntArgs{0}))
      .groups(o.i("groups", 1))
      .bias(o.b("bias", true))
      .dilation(o.ints("dilation", IntArgs{1}));
  H m(co);
  const IntArgs output_size = o.ints("output_size", IntArgs{});  // forward's, not an option
  return Built{m.ptr(), [m, output_size](Inputs& in) { return Outs{m->forward(in["input"], output_size)}; }};
}

nn::PoolOptions pool_options(Opts& o, bool avg) {
  nn::PoolOptions po(o.ints("kernel_size"));
  po.stride(o.ints("stride", IntArgs{})).padding(o.ints("padding", IntArgs{0})).ceil_mode(o.b("ceil_mode", false));
  if (avg) {
    po.count_include_pad(o.b("count_include_pad", true));
    if (int64_t d = o.i("divisor_override", 0)) po.divisor_override(d);  // 0: not given (0 is invalid)
  }
  else po.dilation(o.ints("dilation", IntArgs{1}));
  return po;
}

template <class H>
Built padding_layer(Opts& o) {
  return one(H(nn::PaddingOptions(o.ints("padding")).value(o.d("value", 0.0))));
}

template <class H>
Built lp_pool(Opts& o) {
  return one(H(nn::LPPoolOptions(o.d("norm_type"), o.ints("kernel_size"))
                   .stride(o.ints("stride", IntArgs{}))
                   .ceil_mode(o.b("ceil_mode", false))));
}

template <class Map>
void add_padding_layers(Map& b) {
  b["ReflectionPad1d"] = padding_layer<nn::ReflectionPad1d>;
  b["ReflectionPad2d"] = padding_layer<nn::ReflectionPad2d>;
  b["ReflectionPad3d"] = padding_layer<nn::ReflectionPad3d>;
  b["ReplicationPad1d"] = padding_layer<nn::ReplicationPad1d>;
  b["ReplicationPad2d"] = padding_layer<nn::ReplicationPad2d>;
  b["ReplicationPad3d"] = padding_layer<nn::ReplicationPad3d>;
  b["CircularPad1d"] = padding_layer<nn::CircularPad1d>;
  b["CircularPad2d"] = padding_layer<nn::CircularPad2d>;
  b["CircularPad3d"] = padding_layer<nn::CircularPad3d>;
  b["ZeroPad1d"] = padding_layer<nn::ZeroPad1d>;
  b["ZeroPad2d"] = padding_layer<nn::ZeroPad2d>;
  b["ZeroPad3d"] = padding_layer<nn::ZeroPad3d>;
  b["ConstantPad1d"] = padding_layer<nn::ConstantPad1d>;
  b["ConstantPad2d"] = padding_layer<nn::ConstantPad2d>;
  b["ConstantPad3d"] = padding_layer<nn::ConstantPad3d>;
}

/// A max pool, calling forward_with_indices when the case asks for return_indices.
template <class H>
Built with_indices(Opts& o, H m) {
  if (o.b("return_indices", false))
    return {m.ptr(), [m](Inputs& in) {
              auto [v, i] = m->forward_with_indices(in["input"]);
              return Outs{v, i};
            }};
  return one(m);
}

template <class H>
Built max_pool(Opts& o) {
  return with_indices(o, H(pool_options(o, false)));
}

template <class H>
Built max_unpool(Opts& o) {
  H m(nn::MaxUnpoolOptions(o.ints("kernel_size"))
          .stride(o.ints("stride", IntArgs{}))
          .padding(o.ints("padding", IntArgs{0})));
  IntArgs output_size = o.ints("output_size", IntArgs{});
  return {m.ptr(), [m, output_size](Inputs& in) { return Outs{m(in["input"], in["indices"], output_size)}; }};
}

nn::BatchNormOptions bn_options(Opts& o) {
  return nn::BatchNormOptions(o.i("num_features"))
      .eps(o.d("eps", 1e-5))
      .momentum(o.d("momentum", 0.1))
      .affine(o.b("affine", true))
      .track_running_stats(o.b("track_running_stats", true));
}

nn::RNNOptions rnn_options(Opts& o, bool plain_rnn) {
  nn::RNNOptions r(o.i("input_size"), o.i("hidden_size"));
  r.num_layers(o.i("num_layers", 1))
      .bias(o.b("bias", true))
      .batch_first(o.b("batch_first", false))
      .bidirectional(o.b("bidirectional", false))
      .dropout(o.d("dropout", 0.0));
  if (plain_rnn) r.nonlinearity(o.s("nonlinearity", "tanh"));
  else r.proj_size(o.i("proj_size", 0));
  return r;
}

/// m over the case's padded input packed by its "lengths", the output padded back, as the
/// fixture's PyTorch side runs it (pack_padded_sequence, forward, pad_packed_sequence).
template <class H>
Built packed_rnn(Opts& o, H m) {
  const bool batch_first = o.b("batch_first", false), enforce_sorted = o.b("enforce_sorted", true);
  const int64_t total_length = o.i("total_length", 0);
  return {m.ptr(), [=](Inputs& in) {
            namespace R = nn::utils::rnn;
            R::PackedSequence packed = R::pack_padded_sequence(in["input"], in["lengths"], batch_first, enforce_sorted);
            auto pad = [&](const R::PackedSequence& p) {
              return R::pad_packed_sequence(p, batch_first, 0.0,
                                            total_length ? std::optional<int64_t>(total_length) : std::nullopt)
                  .first;
            };
            if constexpr (std::is_same_v<H, nn::LSTM>) {
              auto [y, hc] = m->forward_with_packed_input(packed, std::make_pair(in.opt("h0"), in.opt("c0")));
              return Outs{pad(y), hc.first, hc.second};
            } else {
              auto [y, h] = m->forward_with_packed_input(packed, in.opt("h0"));
              return Outs{pad(y), h};
            }
          }};
}

nn::TransformerLayerOptions layer_options(Opts& o) {
  return nn::TransformerLayerOptions(o.i("d_model"), o.i("nhead"))
      .dim_feedforward(o.i("dim_feedforward", 2048))
      .dropout(o.d("dropout", 0.1))
      .activation(o.s("activation", "relu"))
      .layer_norm_eps(o.d("layer_norm_eps", 1e-5))
      .batch_first(o.b("batch_first", false))
      .norm_first(o.b("norm_first", false));
}

/// Losses called as m(input, target) with a reduction.
template <class H>
Built loss2(H m) {
  return {m.ptr(), [m](Inputs& in) { return Outs{m(in["input"], in["target"])}; }};
}

/// A parameterless activation.
template <class H>
Builder activation() {
  return [](Opts&) { return one(H()); };
}

// ---- composite architectures (the fixture's Arch* types) -----------------------------------

/// PyTorch's ListNet: a ModuleList of two Linear layers with tanh between, then a head.
struct ListNetImpl : nn::Module {
  ListNetImpl() : nn::Module("ListNet") {
    layers->push_back(nn::Linear(3, 4));
    layers->push_back(nn::Linear(4, 4));
    register_module("layers", layers);
    head = register_module("head", nn::Linear(4, 2));
  }
  Tensor forward(const Tensor& input) {
    Tensor x = input;
    for (size_t i = 0; i < layers->size(); ++i) x = layers->ptr<nn::LinearImpl>(i)->forward(x).tanh();
    return head(x);
  }
  nn::ModuleList layers;
  nn::Linear head{nullptr};
};
EMBER_MODULE(ListNet);

/// PyTorch's DictNet: a ModuleDict (encoder, norm, decoder) and a ParameterList of two scales.
struct DictNetImpl : nn::Module {
  DictNetImpl() : nn::Module("DictNet") {
    blocks->insert("encoder", nn::Linear(3, 4));
    blocks->insert("norm", nn::LayerNorm(nn::LayerNormOptions({4})));
    blocks->insert("decoder", nn::Linear(4, 2));
    register_module("blocks", blocks);
    scales->append(ones({2}));
    scales->append(zeros({2}));
    register_module("scales", scales);
  }
  Tensor forward(const Tensor& x) {
    auto enc = std::dynamic_pointer_cast<nn::LinearImpl>((*blocks)["encoder"]);
    auto norm = std::dynamic_pointer_cast<nn::LayerNormImpl>((*blocks)["norm"]);
    auto dec = std::dynamic_pointer_cast<nn::LinearImpl>((*blocks)["decoder"]);
    return dec->forward(norm->forward(enc->forward(x))) * (*scales)[0] + (*scales)[1];
  }
  nn::ModuleDict blocks;
  nn::ParameterList scales;
};
EMBER_MODULE(DictNet);

std::map<std::string, Builder> make_builders() {
  std::map<std::string, Builder> b;
  // Linear family
  b["Linear"] = [](Opts& o) {
    return one(nn::Linear(nn::LinearOptions(o.i("in_features"), o.i("out_features")).bias(o.b("bias", true))));
  };
  b["Bilinear"] = [](Opts& o) {
    nn::Bilinear m(nn::BilinearOptions(o.i("in1_features"), o.i("in2_features"), o.i("out_features"))
                       .bias(o.b("bias", true)));
    return Built{m.ptr(), [m](Inputs& in) { return Outs{m(in["input1"], in["input2"])}; }};
  };
  b["Identity"] = [](Opts&) { return one(nn::Identity()); };
  b["Flatten"] = [](Opts& o) {
    return one(nn::Flatten(nn::FlattenOptions().start_dim(o.i("start_dim", 1)).end_dim(o.i("end_dim", -1))));
  };
  b["Unflatten"] = [](Opts& o) {
    IntArgs s = o.ints("unflattened_size");
    return one(nn::Unflatten(o.i("dim"), shape_of(s)));
  };
  // Convolution and pooling
  b["Conv1d"] = conv<nn::Conv1d>;
  b["Conv2d"] = conv<nn::Conv2d>;
  b["Conv3d"] = conv<nn::Conv3d>;
  b["ConvTranspose1d"] = conv_transpose<nn::ConvTranspose1d>;
  b["ConvTranspose2d"] = conv_transpose<nn::ConvTranspose2d>;
  b["ConvTranspose3d"] = conv_transpose<nn::ConvTranspose3d>;
  b["MaxPool1d"] = max_pool<nn::MaxPool1d>;
  b["MaxPool2d"] = max_pool<nn::MaxPool2d>;
  b["MaxPool3d"] = max_pool<nn::MaxPool3d>;
  b["AvgPool1d"] = [](Opts& o) { return one(nn::AvgPool1d(pool_options(o, true))); };
  b["AvgPool2d"] = [](Opts& o) { return one(nn::AvgPool2d(pool_options(o, true))); };
  b["AvgPool3d"] = [](Opts& o) { return one(nn::AvgPool3d(pool_options(o, true))); };
  b["AdaptiveAvgPool1d"] = [](Opts& o) { return one(nn::AdaptiveAvgPool1d(o.i("output_size"))); };
  b["AdaptiveAvgPool2d"] = [](Opts& o) { return one(nn::AdaptiveAvgPool2d(o.ints("output_size"))); };
  b["AdaptiveAvgPool3d"] = [](Opts& o) { return one(nn::AdaptiveAvgPool3d(o.ints("output_size"))); };
  b["AdaptiveMaxPool2d"] = [](Opts& o) { return with_indices(o, nn::AdaptiveMaxPool2d(o.ints("output_size"))); };
  b["AdaptiveMaxPool1d"] = [](Opts& o) { return with_indices(o, nn::AdaptiveMaxPool1d(o.i("output_size"))); };
  b["AdaptiveMaxPool3d"] = [](Opts& o) { return with_indices(o, nn::AdaptiveMaxPool3d(o.ints("output_size"))); };
  b["MaxUnpool1d"] = max_unpool<nn::MaxUnpool1d>;
  b["MaxUnpool2d"] = max_unpool<nn::MaxUnpool2d>;
  b["MaxUnpool3d"] = max_unpool<nn::MaxUnpool3d>;
  // Normalisation
  b["BatchNorm1d"] = [](Opts& o) { return one(nn::BatchNorm1d(bn_options(o))); };
  b["BatchNorm2d"] = [](Opts& o) { return one(nn::BatchNorm2d(bn_options(o))); };
  b["BatchNorm3d"] = [](Opts& o) { return one(nn::BatchNorm3d(bn_options(o))); };
  b["LayerNorm"] = [](Opts& o) {
    IntArgs s = o.ints("normalized_shape");
    return one(nn::LayerNorm(nn::LayerNormOptions(shape_of(s))
                                 .eps(o.d("eps", 1e-5))
                                 .elementwise_affine(o.b("elementwise_affine", true))));
  };
  b["GroupNorm"] = [](Opts& o) {
    return one(nn::GroupNorm(o.i("num_groups"), o.i("num_channels"), o.d("eps", 1e-5), o.b("affine", true)));
  };
  b["RMSNorm"] = [](Opts& o) {
    IntArgs s = o.ints("normalized_shape");
    nn::RMSNormOptions r(shape_of(s));
    if (o.s("eps", "none") != "none") r.eps(o.d("eps"));  // absent: the dtype's epsilon
    return one(nn::RMSNorm(r.elementwise_affine(o.b("elementwise_affine", true))));
  };
  b["InstanceNorm2d"] = [](Opts& o) {
    return one(nn::InstanceNorm2d(nn::InstanceNormOptions(o.i("num_features"))
                                        .eps(o.d("eps", 1e-5))
                                        .momentum(o.d("momentum", 0.1))
                                        .affine(o.b("affine", false))
                                        .track_running_stats(o.b("track_running_stats", false))));
  };
  b["InstanceNorm1d"] = [](Opts& o) {
    return one(nn::InstanceNorm1d(nn::InstanceNormOptions(o.i("num_features"))
                                        .eps(o.d("eps", 1e-5))
                                        .momentum(o.d("momentum", 0.1))
                                        .affine(o.b("affine", false))
                                        .track_running_stats(o.b("track_running_stats", false))));
  };
  b["InstanceNorm3d"] = [](Opts& o) {
    return one(nn::InstanceNorm3d(nn::InstanceNormOptions(o.i("num_features"))
                                        .eps(o.d("eps", 1e-5))
                                        .momentum(o.d("momentum", 0.1))
                                        .affine(o.b("affine", false))
                                        .track_running_stats(o.b("track_running_stats", false))));
  };
  // Embeddings
  b["Embedding"] = [](Opts& o) {
    nn::EmbeddingOptions e(o.i("num_embeddings"), o.i("embedding_dim"));
    if (o.s("padding_idx", "none") != "none") e.padding_idx(o.i("padding_idx"));
    if (double m = o.d("max_norm", -1.0); m >= 0) e.max_norm(m);
    e.norm_type(o.d("norm_type", 2.0)).scale_grad_by_freq(o.b("scale_grad_by_freq", false));
    return one(nn::Embedding(e));
  };
  b["EmbeddingBag"] = [](Opts& o) {
    nn::EmbeddingBagOptions e(o.i("num_embeddings"), o.i("embedding_dim"));
    e.mode(o.s("mode", "mean"));
    if (o.s("padding_idx", "none") != "none") e.padding_idx(o.i("padding_idx"));
    if (double m = o.d("max_norm", -1.0); m >= 0) e.max_norm(m);
    e.norm_type(o.d("norm_type", 2.0))
        .scale_grad_by_freq(o.b("scale_grad_by_freq", false))
        .include_last_offset(o.b("include_last_offset", false));
    nn::EmbeddingBag m(e);
    return Built{m.ptr(),
                 [m](Inputs& in) { return Outs{m(in["input"], in.opt("offsets"), in.opt("per_sample_weights"))}; }};
  };
  // Recurrent layers and cells
  b["RNN"] = [](Opts& o) {
    nn::RNN m(rnn_options(o, true));
    if (o.b("packed", false)) return packed_rnn(o, m);
    return Built{m.ptr(), [m](Inputs& in) {
                   auto [y, h] = m(in["input"], in.opt("h0"));
                   return Outs{y, h};
                 }};
  };
  b["LSTM"] = [](Opts& o) {
    nn::LSTM m(rnn_options(o, false));
    if (o.b("packed", false)) return packed_rnn(o, m);
    return Built{m.ptr(), [m](Inputs& in) {
                   auto [y, hc] = m(in["input"], std::make_pair(in.opt("h0"), in.opt("c0")));
                   return Outs{y, hc.first, hc.second};
                 }};
  };
  b["GRU"] = [](Opts& o) {
    nn::GRU m(rnn_options(o, false));
    if (o.b("packed", false)) return packed_rnn(o, m);
    return Built{m.ptr(), [m](Inputs& in) {
                   auto [y, h] = m(in["input"], in.opt("h0"));
                   return Outs{y, h};
                 }};
  };
  b["RNNCell"] = [](Opts& o) {
    nn::RNNCell m(o.i("input_size"), o.i("hidden_size"), o.b("bias", true), o.s("nonlinearity", "tanh"));
    return Built{m.ptr(), [m](Inputs& in) { return Outs{m(in["input"], in.opt("hx"))}; }};
  };
  b["LSTMCell"] = [](Opts& o) {
    nn::LSTMCell m(o.i("input_size"), o.i("hidden_size"), o.b("bias", true));
    return Built{m.ptr(), [m](Inputs& in) {
                   auto [h, c] = m(in["input"], std::make_pair(in.opt("hx"), in.opt("cx")));
                   return Outs{h, c};
                 }};
  };
  b["GRUCell"] = [](Opts& o) {
    nn::GRUCell m(o.i("input_size"), o.i("hidden_size"), o.b("bias", true));
    return Built{m.ptr(), [m](Inputs& in) { return Outs{m(in["input"], in.opt("hx"))}; }};
  };
  // Attention and transformers
  b["MultiheadAttention"] = [](Opts& o) {
    nn::MultiheadAttentionOptions mo(o.i("embed_dim"), o.i("num_heads"));
    mo.bias(o.b("bias", true))
        .batch_first(o.b("batch_first", false))
        .dropout(o.d("dropout", 0.0))
        .add_bias_kv(o.b("add_bias_kv", false))
        .add_zero_attn(o.b("add_zero_attn", false));
    if (int64_t kdim = o.i("kdim", 0); kdim > 0) mo.kdim(kdim);
    if (int64_t vdim = o.i("vdim", 0); vdim > 0) mo.vdim(vdim);
    nn::MultiheadAttention m(mo);
    bool need = o.b("need_weights", true), average = o.b("average_attn_weights", true);
    return Built{m.ptr(), [m, need, average](Inputs& in) {
                   // Self-attention cases give the query alone, as m(q, q, q).
                   const Tensor q = in["query"], k = in.opt("key").defined() ? in["key"] : q,
                                v = in.opt("value").defined() ? in["value"] : q;
                   auto [y, w] = m(q, k, v, in.opt("key_padding_mask"), need, in.opt("attn_mask"), average);
                   return need ? Outs{y, w} : Outs{y};
                 }};
  };
  b["TransformerEncoderLayer"] = [](Opts& o) {
    nn::TransformerEncoderLayer m(layer_options(o));
    return Built{m.ptr(), [m](Inputs& in) {
                   return Outs{m(in["src"], in.opt("src_mask"), in.opt("src_key_padding_mask"))};
                 }};
  };
  b["TransformerDecoderLayer"] = [](Opts& o) {
    nn::TransformerDecoderLayer m(layer_options(o));
    return Built{m.ptr(), [m](Inputs& in) {
                   return Outs{m(in["tgt"], in["memory"], in.opt("tgt_mask"), in.opt("memory_mask"),
                                 in.opt("tgt_key_padding_mask"), in.opt("memory_key_padding_mask"))};
                 }};
  };
  b["TransformerEncoder"] = [](Opts& o) {
    auto lo = layer_options(o);
    nn::LayerNorm norm = o.b("norm", false) ? nn::LayerNorm(nn::LayerNormOptions({lo.d_model()})) : nullptr;
    nn::TransformerEncoder m(nn::TransformerEncoderLayer(lo), o.i("num_layers"), norm);
    return Built{m.ptr(), [m](Inputs& in) {
                   return Outs{m(in["src"], in.opt("mask"), in.opt("src_key_padding_mask"))};
                 }};
  };
  b["TransformerDecoder"] = [](Opts& o) {
    auto lo = layer_options(o);
    nn::LayerNorm norm = o.b("norm", false) ? nn::LayerNorm(nn::LayerNormOptions({lo.d_model()})) : nullptr;
    nn::TransformerDecoder m(nn::TransformerDecoderLayer(lo), o.i("num_layers"), norm);
    return Built{m.ptr(), [m](Inputs& in) {
                   return Outs{m(in["tgt"], in["memory"], in.opt("tgt_mask"), in.opt("memory_mask"),
                                 in.opt("tgt_key_padding_mask"), in.opt("memory_key_padding_mask"))};
                 }};
  };
  b["Transformer"] = [](Opts& o) {
    nn::Transformer m(nn::TransformerOptions()
                          .d_model(o.i("d_model", 512))
                          .nhead(o.i("nhead", 8))
                          .num_encoder_layers(o.i("num_encoder_layers", 6))
                          .num_decoder_layers(o.i("num_decoder_layers", 6))
                          .dim_feedforward(o.i("dim_feedforward", 2048))
                          .dropout(o.d("dropout", 0.1))
                          .activation(o.s("activation", "relu"))
                          .layer_norm_eps(o.d("layer_norm_eps", 1e-5))
                          .batch_first(o.b("batch_first", false))
                          .norm_first(o.b("norm_first", false)));
    return Built{m.ptr(), [m](Inputs& in) {
                   return Outs{m(in["src"], in["tgt"], in.opt("src_mask"), in.opt("tgt_mask"), in.opt("memory_mask"),
                                 in.opt("src_key_padding_mask"), in.opt("tgt_key_padding_mask"),
                                 in.opt("memory_key_padding_mask"))};
                 }};
  };
  // Resampling
  b["Upsample"] = [](Opts& o) {
    nn::UpsampleOptions u;
    u.size(o.ints("size", IntArgs{}))
        .mode(o.s("mode", "nearest"))
        .align_corners(o.b("align_corners", false))
        .recompute_scale_factor(o.b("recompute_scale_factor", false));
    if (double f = o.d("scale_factor", 0.0); f != 0) u.scale_factor({f});
    return one(nn::Upsample(u));
  };
  b["Interpolate"] = [](Opts& o) {  // F::interpolate with its options; no parameters to hold
    nn::F::InterpolateFuncOptions f;
    f.mode(o.s("mode", "nearest")).antialias(o.b("antialias", false));
    if (auto size = o.ints("size", std::vector<int64_t>{}); !size.empty()) f.size(size);
    if (auto scale = o.doubles("scale_factor", std::vector<double>{}); !scale.empty()) f.scale_factor(scale);
    if (int64_t align = o.i("align_corners", -1); align >= 0) f.align_corners(align != 0);
    if (int64_t recompute = o.i("recompute_scale_factor", -1); recompute >= 0) f.recompute_scale_factor(recompute != 0);
    nn::Identity holder;
    return Built{holder.ptr(), [f](Inputs& in) { return Outs{nn::F::interpolate(in["input"], f)}; }};
  };
  b["PixelShuffle"] = [](Opts& o) { return one(nn::PixelShuffle(o.i("upscale_factor"))); };
  b["PixelUnshuffle"] = [](Opts& o) { return one(nn::PixelUnshuffle(o.i("downscale_factor"))); };
  b["Unfold"] = [](Opts& o) {
    return one(nn::Unfold(nn::UnfoldOptions(o.ints("kernel_size"))
                              .dilation(o.ints("dilation", IntArgs{1}))
                              .padding(o.ints("padding", IntArgs{0}))
                              .stride(o.ints("stride", IntArgs{1}))));
  };
  b["Fold"] = [](Opts& o) {
    return one(nn::Fold(nn::FoldOptions(o.ints("output_size"), o.ints("kernel_size"))
                            .dilation(o.ints("dilation", IntArgs{1}))
                            .padding(o.ints("padding", IntArgs{0}))
                            .stride(o.ints("stride", IntArgs{1}))));
  };
  add_padding_layers(b);
  // grid_sample and affine_grid have no module: the case's closure calls the functions.
  b["GridSample"] = [](Opts& o) {
    const std::string mode = o.s("mode"), padding = o.s("padding_mode");
    const bool align = o.b("align_corners", false);
    nn::Identity holder;  // no parameters, as the fixture's module
    return Built{holder.ptr(), [=](Inputs& in) {
                   return Outs{nn::F::grid_sample(in["input"], in["grid"], mode, padding, align)};
                 }};
  };
  b["AffineGridSample"] = [](Opts& o) {
    const int64_t d = o.i("out_d", 0), h = o.i("out_h"), w = o.i("out_w");  // out_d: a volume's depth
    const bool align = o.b("align_corners", false);
    nn::Identity holder;
    return Built{holder.ptr(), [=](Inputs& in) {
                   const Tensor& x = in["input"];
                   Shape size = d > 0 ? Shape{x.size(0), x.size(1), d, h, w} : Shape{x.size(0), x.size(1), h, w};
                   Tensor grid = nn::F::affine_grid(in["theta"], size, align);
                   return Outs{nn::F::grid_sample(x, grid, "bilinear", "zeros", align)};
                 }};
  };
  b["LocalResponseNorm"] = [](Opts& o) {
    return one(nn::LocalResponseNorm(nn::LocalResponseNormOptions(o.i("size"))
                                         .alpha(o.d("alpha", 1e-4))
                                         .beta(o.d("beta", 0.75))
                                         .k(o.d("k", 1.0))));
  };
  b["ChannelShuffle"] = [](Opts& o) { return one(nn::ChannelShuffle(o.i("groups"))); };
  b["LPPool1d"] = lp_pool<nn::LPPool1d>;
  b["LPPool2d"] = lp_pool<nn::LPPool2d>;
  b["LPPool3d"] = lp_pool<nn::LPPool3d>;
  b["Dropout1d"] = [](Opts& o) { return one(nn::Dropout1d(o.d("p", 0.5))); };
  b["Dropout3d"] = [](Opts& o) { return one(nn::Dropout3d(o.d("p", 0.5))); };
  b["AlphaDropout"] = [](Opts& o) { return one(nn::AlphaDropout(o.d("p", 0.5))); };
  b["FeatureAlphaDropout"] = [](Opts& o) { return one(nn::FeatureAlphaDropout(o.d("p", 0.5))); };
  // Activations and dropout
  b["ReLU"] = activation<nn::ReLU>();
  b["ReLU6"] = activation<nn::ReLU6>();
  b["SELU"] = activation<nn::SELU>();
  b["SiLU"] = activation<nn::SiLU>();
  b["Mish"] = activation<nn::Mish>();
  b["Sigmoid"] = activation<nn::Sigmoid>();
  b["Tanh"] = activation<nn::Tanh>();
  b["Softsign"] = activation<nn::Softsign>();
  b["Hardsigmoid"] = activation<nn::Hardsigmoid>();
  b["Hardswish"] = activation<nn::Hardswish>();
  b["LogSigmoid"] = activation<nn::LogSigmoid>();
  b["Tanhshrink"] = activation<nn::Tanhshrink>();
  b["LeakyReLU"] = [](Opts& o) { return one(nn::LeakyReLU(o.d("negative_slope", 0.01))); };
  b["ELU"] = [](Opts& o) { return one(nn::ELU(o.d("alpha", 1.0))); };
  b["CELU"] = [](Opts& o) { return one(nn::CELU(o.d("alpha", 1.0))); };
  b["GELU"] = [](Opts& o) { return one(nn::GELU(o.s("approximate", "none"))); };
  b["Softplus"] = [](Opts& o) { return one(nn::Softplus(o.d("beta", 1.0), o.d("threshold", 20.0))); };
  b["Hardtanh"] = [](Opts& o) { return one(nn::Hardtanh(o.d("min_val", -1.0), o.d("max_val", 1.0))); };
  b["Softmax"] = [](Opts& o) { return one(nn::Softmax(o.i("dim"))); };
  b["LogSoftmax"] = [](Opts& o) { return one(nn::LogSoftmax(o.i("dim"))); };
  b["Hardshrink"] = [](Opts& o) { return one(nn::Hardshrink(o.d("lambd", 0.5))); };
  b["Softshrink"] = [](Opts& o) { return one(nn::Softshrink(o.d("lambd", 0.5))); };
  b["Threshold"] = [](Opts& o) { return one(nn::Threshold(o.d("threshold"), o.d("value"))); };
  b["PReLU"] = [](Opts& o) { return one(nn::PReLU(o.i("num_parameters", 1), o.d("init", 0.25))); };
  b["GLU"] = [](Opts& o) { return one(nn::GLU(o.i("dim", -1))); };
  b["Softmin"] = [](Opts& o) { return one(nn::Softmin(o.i("dim"))); };
  b["Dropout"] = [](Opts& o) { return one(nn::Dropout(o.d("p", 0.5))); };
  b["Dropout2d"] = [](Opts& o) { return one(nn::Dropout2d(o.d("p", 0.5))); };
  // Losses
  b["MSELoss"] = [](Opts& o) { return loss2(nn::MSELoss(o.s("reduction", "mean"))); };
  b["L1Loss"] = [](Opts& o) { return loss2(nn::L1Loss(o.s("reduction", "mean"))); };
  b["SmoothL1Loss"] = [](Opts& o) { return loss2(nn::SmoothL1Loss(o.s("reduction", "mean"), o.d("beta", 1.0))); };
  b["HuberLoss"] = [](Opts& o) { return loss2(nn::HuberLoss(o.s("reduction", "mean"), o.d("delta", 1.0))); };
  b["CrossEntropyLoss"] = [](Opts& o) {
    return loss2(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions()
                                          .weight(o.buffer("weight"))
                                          .ignore_index(o.i("ignore_index", -100))
                                          .reduction(o.s("reduction", "mean"))
                                          .label_smoothing(o.d("label_smoothing", 0.0))));
  };
  b["NLLLoss"] = [](Opts& o) {
    return loss2(nn::NLLLoss(nn::NLLLossOptions()
                                 .weight(o.buffer("weight"))
                                 .ignore_index(o.i("ignore_index", -100))
                                 .reduction(o.s("reduction", "mean"))));
  };
  b["BCELoss"] = [](Opts& o) { return loss2(nn::BCELoss(o.buffer("weight"), o.s("reduction", "mean"))); };
  b["BCEWithLogitsLoss"] = [](Opts& o) {
    return loss2(nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions()
                                           .weight(o.buffer("weight"))
                                           .pos_weight(o.buffer("pos_weight"))
                                           .reduction(o.s("reduction", "mean"))));
  };
  b["KLDivLoss"] = [](Opts& o) { return loss2(nn::KLDivLoss(o.s("reduction", "mean"), o.b("log_target", false))); };
  b["CosineEmbeddingLoss"] = [](Opts& o) {
    nn::CosineEmbeddingLoss m(o.d("margin", 0.0), o.s("reduction", "mean"));
    return Built{m.ptr(), [m](Inputs& in) { return Outs{m(in["input1"], in["input2"], in["target"])}; }};
  };
  b["MarginRankingLoss"] = [](Opts& o) {
    nn::MarginRankingLoss m(o.d("margin", 0.0), o.s("reduction", "mean"));
    return Built{m.ptr(), [m](Inputs& in) { return Outs{m(in["input1"], in["input2"], in["target"])}; }};
  };
  b["TripletMarginLoss"] = [](Opts& o) {
    nn::TripletMarginLoss m(o.d("margin", 1.0), o.d("p", 2.0), o.d("eps", 1e-6), o.b("swap", false),
                            o.s("reduction", "mean"));
    return Built{m.ptr(), [m](Inputs& in) { return Outs{m(in["anchor"], in["positive"], in["negative"])}; }};
  };
  b["AdaptiveLogSoftmaxWithLoss"] = [](Opts& o) {
    nn::AdaptiveLogSoftmaxWithLoss m(nn::AdaptiveLogSoftmaxWithLossOptions(o.i("in_features"), o.i("n_classes"),
                                                                         o.ints("cutoffs"))
                                         .div_value(o.d("div_value", 4.0))
                                         .head_bias(o.b("head_bias", false)));
    if (o.s("method", "forward") == "log_prob")
      return Built{m.ptr(), [m](Inputs& in) { return Outs{m->log_prob(in["input"])}; }};
    return Built{m.ptr(), [m](Inputs& in) {
                   auto r = m(in["input"], in["target"]);
                   return Outs{r.output, r.loss};
                 }};
  };
  b["SoftMarginLoss"] = [](Opts& o) { return loss2(nn::SoftMarginLoss(nn::SoftMarginLossOptions(o.s("reduction", "mean")))); };
  b["MultiLabelMarginLoss"] = [](Opts& o) { return loss2(nn::MultiLabelMarginLoss(nn::MultiLabelMarginLossOptions(o.s("reduction", "mean")))); };
  b["HingeEmbeddingLoss"] = [](Opts& o) {
    return loss2(nn::HingeEmbeddingLoss(
        nn::HingeEmbeddingLossOptions().margin(o.d("margin", 1.0)).reduction(o.s("reduction", "mean"))));
  };
  b["MultiMarginLoss"] = [](Opts& o) {
    return loss2(nn::MultiMarginLoss(nn::MultiMarginLossOptions()
                                         .p(o.i("p", 1))
                                         .margin(o.d("margin", 1.0))
                                         .weight(o.buffer("weight"))
                                         .reduction(o.s("reduction", "mean"))));
  };
  b["MultiLabelSoftMarginLoss"] = [](Opts& o) {
    return loss2(nn::MultiLabelSoftMarginLoss(
        nn::MultiLabelSoftMarginLossOptions().weight(o.buffer("weight")).reduction(o.s("reduction", "mean"))));
  };
  b["PoissonNLLLoss"] = [](Opts& o) {
    return loss2(nn::PoissonNLLLoss(nn::PoissonNLLLossOptions()
                                        .log_input(o.b("log_input", true))
                                        .full(o.b("full", false))
                                        .eps(o.d("eps", 1e-8))
                                        .reduction(o.s("reduction", "mean"))));
  };
  b["GaussianNLLLoss"] = [](Opts& o) {
    nn::GaussianNLLLoss m(
        nn::GaussianNLLLossOptions().full(o.b("full", false)).eps(o.d("eps", 1e-6)).reduction(o.s("reduction", "mean")));
    return Built{m.ptr(), [m](Inputs& in) { return Outs{m(in["input"], in["target"], in["var"])}; }};
  };
  b["TripletMarginWithDistanceLoss"] = [](Opts& o) {
    nn::TripletMarginWithDistanceLossOptions opts;
    opts.margin(o.d("margin", 1.0)).swap(o.b("swap", false)).reduction(o.s("reduction", "mean"));
    const std::string distance = o.s("distance", "pairwise");
    if (distance != "pairwise" && distance != "cosine") throw std::runtime_error("unknown distance " + distance);
    if (distance == "cosine")
      opts.distance_function([](const Tensor& a, const Tensor& b) { return 1.0 - nn::F::cosine_similarity(a, b); });
    nn::TripletMarginWithDistanceLoss m(opts);
    return Built{m.ptr(), [m](Inputs& in) { return Outs{m(in["anchor"], in["positive"], in["negative"])}; }};
  };
  b["CTCLoss"] = [](Opts& o) {
    nn::CTCLoss m(o.i("blank", 0), o.s("reduction", "mean"), o.b("zero_infinity", false));
    // The fixture's input is logits: see the tool's note on PyTorch's ctc_loss gradient.
    return Built{m.ptr(), [m](Inputs& in) {
                   return Outs{m(in["logits"].log_softmax(2), in["targets"], in.ints("input_lengths"),
                                 in.ints("target_lengths"))};
                 }};
  };
  // Composite architectures
  b["ArchSequentialMLP"] = [](Opts&) { return one(nn::Sequential(nn::Linear(4, 6), nn::ReLU(), nn::Linear(6, 3))); };
  b["ArchNestedSequential"] = [](Opts&) {
    return one(nn::Sequential(nn::Sequential(nn::Linear(3, 4), nn::Tanh()),
                              nn::Sequential(nn::Linear(4, 4), nn::ReLU(), nn::Sequential(nn::Linear(4, 2)))));
  };
  b["ArchSequentialCNN"] = [](Opts&) {
    return one(nn::Sequential(nn::Conv2d(nn::ConvOptions(2, 4, {3}).padding({1})), nn::BatchNorm2d(4), nn::ReLU(),
                              nn::MaxPool2d(nn::PoolOptions({2})), nn::Flatten(), nn::Linear(16, 3)));
  };
  b["ArchModuleList"] = [](Opts&) { return one(ListNet()); };
  b["ArchModuleDict"] = [](Opts&) { return one(DictNet()); };
  return b;
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

}  // namespace

const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> b = make_builders();
  return b;
}

// ---- options and inputs --------------------------------------------------------------------

const std::string* Opts::raw(const std::string& k) {
  auto it = c_.options.find(k);
  if (it == c_.options.end()) return nullptr;
  used_.insert(k);
  return &it->second;
}

static double number(const std::string& k, const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') fail("option " + k + "=" + v + " is not a number");
  return x;
}

int64_t Opts::i(const std::string& k, std::optional<int64_t> dflt) {
  const std::string* v = raw(k);
  if (!v) return dflt ? *dflt : (fail("missing option " + k), 0);
  double x = number(k, *v);
  if (x != static_cast<double>(static_cast<int64_t>(x))) fail("option " + k + "=" + *v + " is not an integer");
  return static_cast<int64_t>(x);
}
double Opts::d(const std::string& k, std::optional<double> dflt) {
  const std::string* v = raw(k);
  if (!v) return dflt ? *dflt : (fail("missing option " + k), 0.0);
  return number(k, *v);
}
bool Opts::b(const std::string& k, bool dflt) {
  const std::string* v = raw(k);
  if (!v) return dflt;
  if (*v != "0" && *v != "1") fail("option " + k + "=" + *v + " is not 0 or 1");
  return *v == "1";
}
std::string Opts::s(const std::string& k, std::optional<std::string> dflt) {
  const std::string* v = raw(k);
  if (!v) return dflt ? *dflt : (fail("missing option " + k), std::string());
  return *v;
}
std::vector<double> Opts::doubles(const std::string& k, std::optional<std::vector<double>> dflt) {
  const std::string* v = raw(k);
  if (!v) return dflt ? *dflt : (fail("missing option " + k), std::vector<double>());
  std::vector<double> out;
  size_t start = 0;
  while (start <= v->size()) {
    size_t comma = v->find(',', start);
    out.push_back(number(k, v->substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}
std::vector<int64_t> Opts::ints(const std::string& k, std::optional<std::vector<int64_t>> dflt) {
  if (!raw(k)) return dflt ? *dflt : (fail("missing option " + k), std::vector<int64_t>());
  std::vector<int64_t> out;
  for (double v : doubles(k)) out.push_back(static_cast<int64_t>(v));
  return out;
}
bool Opts::is_word(const std::string& k) const {
  auto it = c_.options.find(k);
  if (it == c_.options.end() || it->second.empty()) return false;
  char c = it->second[0];
  return !(c == '-' || c == '.' || (c >= '0' && c <= '9'));
}
Tensor Opts::buffer(const std::string& name) const {
  for (const Named& n : c_.buffers)
    if (n.name == name) return n.tensor();
  return {};
}
std::vector<std::string> Opts::unused() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : c_.options)
    if (!used_.count(k)) out.push_back(k);
  return out;
}

Tensor Inputs::operator[](const std::string& name) {
  Tensor t = opt(name);
  if (!t.defined()) fail("the case has no input named " + name);
  return t;
}
Tensor Inputs::opt(const std::string& name) {
  auto it = t_.find(name);
  if (it == t_.end()) return {};
  used_.insert(name);
  return it->second;
}
std::vector<int64_t> Inputs::ints(const std::string& name) {
  Tensor t = (*this)[name].to(DType::I64).contiguous();
  if (t.dim() != 1) fail("input " + name + " must be 1-d");
  const int64_t* p = t.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + t.numel());
}
std::vector<std::string> Inputs::unused() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : t_)
    if (!used_.count(k)) out.push_back(k);
  return out;
}

Tensor Named::tensor() const {
  Tensor t = empty(shape, TensorOptions(DType::F64));
  std::copy(values.begin(), values.end(), t.data_ptr<double>());
  return t.to(dtype);
}

}  // namespace ember::nn_golden
