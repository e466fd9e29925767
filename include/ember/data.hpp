#pragma once
/// data: datasets, samplers, transforms, the DataLoader, MNIST/IDX and CSV readers, and the
/// progress bar that training loops over them usually want.
///   #include <ember/data.hpp>
/// (kept out of <ember/ember.hpp> so that programs using only tensors compile quickly.)

#include <ember/ember.hpp>
#include <ember/data/collate.hpp>
#include <ember/data/csv.hpp>
#include <ember/data/dataloader.hpp>
#include <ember/data/dataset.hpp>
#include <ember/data/generator.hpp>
#include <ember/data/mnist.hpp>
#include <ember/data/samplers.hpp>
#include <ember/data/transforms.hpp>
#include <ember/progress.hpp>
