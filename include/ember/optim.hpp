#pragma once
/// Optimisers and learning-rate schedulers (not part of ember.hpp, to keep its compile time):
///   #include <ember/optim.hpp>
///   ember::optim::AdamW opt(params, ember::optim::AdamWOptions(1e-3).weight_decay(0.01));
///   ember::optim::CosineAnnealingLR sched(opt, 100);

#include <ember/optim/optimizer.hpp>
#include <ember/optim/sgd.hpp>
#include <ember/optim/adam.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/adamax.hpp>
#include <ember/optim/nadam.hpp>
#include <ember/optim/radam.hpp>
#include <ember/optim/rmsprop.hpp>
#include <ember/optim/adagrad.hpp>
#include <ember/optim/adadelta.hpp>
#include <ember/optim/lion.hpp>
#include <ember/optim/rprop.hpp>
#include <ember/optim/asgd.hpp>
#include <ember/optim/lbfgs.hpp>
#include <ember/optim/schedulers.hpp>
