// The default-policy layer code that headers only declare, so that every program including
// <ember/nn.hpp> does not compile it: from_pretrained builds a whole Embedding(Bag)Impl, and
// the transformer options that take a layer's options build a whole layer.

#include <ember/nn.hpp>

namespace ember::nn {
namespace {
/// A Holder (Embedding or EmbeddingBag) whose weight holds a copy of `embeddings` (2-d,
/// floating; its dtype and device); make_options(rows, cols) gives the holder's options. The
/// padding row keeps its given values, as PyTorch's from_pretrained.
template <class Holder, class MakeOptions>
Holder embedding_from_pretrained(const Tensor& embeddings, MakeOptions make_options,
                                 const EmbeddingFromPretrainedOptions& o, const char* op) {
  EMBER_CHECK(embeddings.defined() && embeddings.dim() == 2,
              "[{}::from_pretrained] embeddings must be 2-d (num_embeddings, embedding_dim), got {}", op,
              embeddings.defined() ? embeddings.sizes() : Shape{});
  EMBER_CHECK(embeddings.is_floating_point(), "[{}::from_pretrained] embeddings must be floating point, got {}", op,
              embeddings.dtype());
  Holder h(make_options(embeddings.size(0), embeddings.size(1))
               .padding_idx(o.padding_idx())
               .max_norm(o.max_norm())
               .norm_type(o.norm_type())
               .scale_grad_by_freq(o.scale_grad_by_freq()));
  h->to(embeddings.device(), embeddings.dtype());
  {
    autograd::NoGradGuard ng;
    h->weight.copy_(embeddings);
  }
  h->weight.requires_grad_(!o.freeze());
  return h;
}
}  // namespace

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& o) {
  return embedding_from_pretrained<Embedding>(
      embeddings, [](int64_t rows, int64_t cols) { return EmbeddingOptions(rows, cols); }, o, "Embedding");
}

EmbeddingBag EmbeddingBag::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& o) {
  return embedding_from_pretrained<EmbeddingBag>(
      embeddings,
      [&](int64_t rows, int64_t cols) {
        return EmbeddingBagOptions(rows, cols).mode(o.mode()).include_last_offset(o.include_last_offset());
      },
      o, "EmbeddingBag");
}

TransformerEncoderOptions::TransformerEncoderOptions(const TransformerEncoderLayerOptions& layer_options,
                                                     int64_t num_layers)
    : encoder_layer_(TransformerEncoderLayer(layer_options)), num_layers_(num_layers) {}

TransformerDecoderOptions::TransformerDecoderOptions(const TransformerDecoderLayerOptions& layer_options,
                                                     int64_t num_layers)
    : decoder_layer_(TransformerDecoderLayer(layer_options)), num_layers_(num_layers) {}

}  // namespace ember::nn
