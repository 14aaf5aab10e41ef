//! Union-find over node numbers whose roots are their components' smallest members: the
//! clusters of single linkage, numbered by their first document.
//!
//! ```
//! use neardup::dedup::union_find::{components, UnionFind};
//!
//! // 0–3, 3–5 and 2–4 linked: {0, 3, 5}, {1}, {2, 4}
//! assert_eq!(components(6, [(3, 0), (5, 3), (4, 2)]), vec![0, 1, 2, 0, 2, 0]);
//!
//! let mut uf = UnionFind::new(3);
//! assert_eq!(uf.union(2, 1), 1); // the root is the smaller member
//! assert_eq!(uf.find(2), 1);
//! ```

/// Union-find whose roots are their components' smallest members (union by the smaller
/// root, path halving). A parent is never above its child.
#[derive(Debug, Default, Clone)]
pub struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    /// `n` nodes, each its own component.
    pub fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n as u32).collect(),
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// Whether there is no node.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Adds a node, its own component; returns its number.
    pub fn push(&mut self) -> u32 {
        let i = self.parent.len() as u32;
        self.parent.push(i);
        i
    }

    /// The smallest member of `x`'s component.
    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let p = self.parent[x as usize];
            self.parent[x as usize] = self.parent[p as usize];
            x = p;
        }
        x
    }

    /// Joins the components of `a` and `b`; returns the smallest member of the union.
    pub fn union(&mut self, a: u32, b: u32) -> u32 {
        let (ra, rb) = (self.find(a), self.find(b));
        let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
        self.parent[hi as usize] = lo;
        lo
    }

    /// Every node's root. A parent is never above its child, so one ascending pass settles
    /// each node after its parent.
    pub fn into_roots(mut self) -> Vec<u32> {
        for i in 0..self.parent.len() {
            let p = self.parent[i] as usize;
            self.parent[i] = self.parent[p];
        }
        self.parent
    }
}

/// The connected components of nodes `0..n` linked by `edges`: each node's component's
/// smallest member.
///
/// # Panics
/// When an edge names a node `≥ n`.
pub fn components(n: usize, edges: impl IntoIterator<Item = (u32, u32)>) -> Vec<u32> {
    let mut uf = UnionFind::new(n);
    for (a, b) in edges {
        uf.union(a, b);
    }
    uf.into_roots()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Components by repeated relaxation: every node takes the smallest label of its
    /// neighbours until nothing changes.
    fn by_relaxation(n: usize, edges: &[(u32, u32)]) -> Vec<u32> {
        let mut label: Vec<u32> = (0..n as u32).collect();
        loop {
            let mut changed = false;
            for &(a, b) in edges {
                let m = label[a as usize].min(label[b as usize]);
                for x in [a, b] {
                    if label[x as usize] != m {
                        label[x as usize] = m;
                        changed = true;
                    }
                }
            }
            if !changed {
                return label;
            }
        }
    }

    proptest! {
        #[test]
        fn components_equal_relaxation(
            n in 1usize..60,
            raw in proptest::collection::vec((0u32..60, 0u32..60), 0..120),
        ) {
            let edges: Vec<(u32, u32)> =
                raw.into_iter().map(|(a, b)| (a % n as u32, b % n as u32)).collect();
            prop_assert_eq!(components(n, edges.iter().copied()), by_relaxation(n, &edges));
        }
    }

    #[test]
    fn pushed_nodes_join_components() {
        let mut uf = UnionFind::default();
        let (a, b, c) = (uf.push(), uf.push(), uf.push());
        assert_eq!(uf.union(c, b), b);
        assert_eq!(uf.union(c, a), a);
        assert_eq!(uf.len(), 3);
        assert_eq!(uf.into_roots(), vec![0, 0, 0]);
    }
}
