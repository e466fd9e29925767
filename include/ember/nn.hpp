#pragma once
/// nn: modules, functional forms, initialisers and utilities.
///   #include <ember/nn.hpp>
/// (kept out of <ember/ember.hpp> so that programs using only tensors compile quickly.)

#include <ember/ember.hpp>
#include <ember/nn/functional.hpp>
#include <ember/nn/functional_activation.hpp>
#include <ember/nn/functional_channel_ops.hpp>
#include <ember/nn/functional_conv.hpp>
#include <ember/nn/functional_distance.hpp>
#include <ember/nn/functional_dropout.hpp>
#include <ember/nn/functional_sampling.hpp>
#include <ember/nn/functional_fold.hpp>
#include <ember/nn/functional_fractional_pool.hpp>
#include <ember/nn/functional_grid.hpp>
#include <ember/nn/functional_resample.hpp>
#include <ember/nn/functional_layers.hpp>
#include <ember/nn/functional_likelihood_losses.hpp>
#include <ember/nn/functional_margin_losses.hpp>
#include <ember/nn/functional_options.hpp>
#include <ember/nn/init.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/modules/activation.hpp>
#include <ember/nn/modules/adaptive.hpp>
#include <ember/nn/modules/any.hpp>
#include <ember/nn/modules/channel.hpp>
#include <ember/nn/modules/container.hpp>
#include <ember/nn/modules/conv.hpp>
#include <ember/nn/modules/distance.hpp>
#include <ember/nn/modules/fold.hpp>
#include <ember/nn/modules/fractional_pool.hpp>
#include <ember/nn/modules/layers.hpp>
#include <ember/nn/modules/linear.hpp>
#include <ember/nn/modules/loss.hpp>
#include <ember/nn/modules/margin_loss.hpp>
#include <ember/nn/modules/padding.hpp>
#include <ember/nn/modules/rnn.hpp>
#include <ember/nn/modules/transformer.hpp>
#include <ember/nn/torch_functions.hpp>
#include <ember/nn/utils.hpp>
#include <ember/nn/utils_rnn.hpp>
