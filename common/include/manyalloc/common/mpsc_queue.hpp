// Lock-free multi-producer / single-consumer intrusive queue (host code).
//
// Producers push nodes with one CAS; the single consumer takes every queued
// node at once with one exchange. Because the consumer never pops nodes one
// by one, the classic ABA problem of lock-free stacks cannot occur: a node
// can only be pushed again after the consumer has taken it.
//
// The order of take_all() is LIFO (newest first). Users that need FIFO order
// reverse the list; the allocators of this project do not care about order.
//
// Memory ordering: push() publishes everything the producer wrote before it
// (release); take_all() acquires it. Successive pushes form a release
// sequence, so one take_all() synchronises with every producer it collects.
#pragma once

#include <atomic>

namespace manyalloc {

// Node: any type with a public member `Node* Node::*Next` that the queue owns
// while the node is queued.
template <class Node, Node* Node::*Next>
class MpscQueue {
 public:
  constexpr MpscQueue() noexcept = default;
  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  // Any thread. Returns true when the queue was empty before this push.
  bool push(Node* node) noexcept {
    Node* old = head_.load(std::memory_order_relaxed);
    do {
      node->*Next = old;
    } while (!head_.compare_exchange_weak(old, node, std::memory_order_release,
                                          std::memory_order_relaxed));
    return old == nullptr;
  }

  // Consumer only: removes and returns every queued node (linked by Next,
  // newest first), or nullptr.
  Node* take_all() noexcept {
    if (head_.load(std::memory_order_relaxed) == nullptr) return nullptr;
    return head_.exchange(nullptr, std::memory_order_acquire);
  }

  // Cheap check for the consumer's fast path; may be stale by the time it
  // returns, which only delays the flush to the next call.
  bool maybe_empty() const noexcept { return head_.load(std::memory_order_relaxed) == nullptr; }

  // Only when no thread can push (after fork, in the child): forget the nodes.
  void reset() noexcept { head_.store(nullptr, std::memory_order_relaxed); }

 private:
  std::atomic<Node*> head_{nullptr};
};

}  // namespace manyalloc
