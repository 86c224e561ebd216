//! A list that grows through `&self` and lends references to its elements
//! for as long as it lives: what a test implementation of
//! [`crate::Shared`] needs so that `alloc(&self)` can add memory while
//! slices from earlier `words(&self)` calls stay valid — without `unsafe`.

use std::sync::OnceLock;

/// Elements set once each, by index, never moved or removed. A chain of
/// boxed nodes: walking it costs one step per element, which is fine for
/// the few allocations an application makes.
pub(crate) struct AppendOnly<T> {
    head: Node<T>,
}

struct Node<T> {
    value: OnceLock<T>,
    next: OnceLock<Box<Node<T>>>,
}

impl<T> Node<T> {
    fn new() -> Node<T> {
        Node {
            value: OnceLock::new(),
            next: OnceLock::new(),
        }
    }
}

impl<T> AppendOnly<T> {
    pub(crate) fn new() -> AppendOnly<T> {
        AppendOnly { head: Node::new() }
    }

    /// Element `i`, made by `init` if nobody set it yet (the first caller
    /// wins; later callers get the first value).
    pub(crate) fn get_or_init(&self, i: usize, init: impl FnOnce() -> T) -> &T {
        self.node(i).value.get_or_init(init)
    }

    /// Element `i` if it was set.
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        self.node(i).value.get()
    }

    fn node(&self, i: usize) -> &Node<T> {
        let mut node = &self.head;
        for _ in 0..i {
            node = node.next.get_or_init(|| Box::new(Node::new()));
        }
        node
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_survive_growth() {
        let list = AppendOnly::new();
        let first: &Vec<u32> = list.get_or_init(0, || vec![1, 2]);
        for i in 1..100 {
            list.get_or_init(i, || vec![i as u32]);
        }
        assert_eq!(first, &vec![1, 2]);
        assert_eq!(list.get(57), Some(&vec![57]));
        assert_eq!(list.get(100), None);
        // The first initialiser wins.
        assert_eq!(list.get_or_init(0, || vec![9]), &vec![1, 2]);
    }
}
