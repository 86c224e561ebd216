//! A maximum-weight perfect matching of a complete graph on an even number
//! of vertices whose integer weights are one dense symmetric matrix:
//! Edmonds' blossom algorithm in its primal-dual form, with the slack
//! bookkeeping that makes it O(n³) (Galil, "Efficient algorithms for
//! finding maximum matching in graphs", 1986).
//!
//! Written for this shape rather than for a general graph: a complete graph
//! needs no adjacency lists (a vertex's neighbours are every other vertex,
//! its edge weights one row of the matrix), so the memory is the matrix and
//! O(n) per blossom, and an edge is the pair of its ends. A general-graph
//! implementation (`rustworkx-core`) stored 2 million edge objects for
//! 2,000 programs and took about 8·10⁻⁹ s per n³; this one scans a row of
//! integers.
//!
//! The matching sought is perfect, so vertex duals are free (no "vertex
//! dual reaches zero" step): every stage ends in an augmentation. Weights
//! are doubled and every vertex starts with the dual of its heaviest edge,
//! which is feasible and makes every mutually heaviest pair tight: those are
//! matched before the first stage. All duals start even, so every vertex
//! in the alternating forest has the same parity and the slack of an edge
//! between two outer vertices is even: halving it stays exact.
//!
//! No recursion: blossoms nest up to n/2 deep, so their leaves, their
//! re-basing and their expansion walk explicit stacks.

/// No vertex, blossom or edge.
const NONE: usize = usize::MAX;
/// An edge as its two ends; which end comes first is said where it matters.
type Edge = (usize, usize);
const NO_EDGE: Edge = (NONE, NONE);

/// Labels of vertices and top-level blossoms in the alternating forest.
const FREE: u8 = 0;
/// Outer ("S"): at an even distance from a root.
const OUTER: u8 = 1;
/// Inner ("T"): at an odd distance from a root.
const INNER: u8 = 2;

/// The matching: `mate[v]` for every vertex `v` of `0..n`.
///
/// `w` is `n × n`, row-major, symmetric (the diagonal is not read), `n`
/// even; weights must fit in ±2⁶⁰ (callers scale them to well below that,
/// so no dual can overflow). `stage` is called after each augmentation with
/// the number of vertices still unmatched (for a progress bar).
pub(crate) fn max_weight_perfect_matching(
    n: usize,
    w: &[i64],
    stage: &mut dyn FnMut(usize),
) -> Vec<usize> {
    assert!(n % 2 == 0, "a perfect matching needs an even count");
    assert_eq!(w.len(), n * n, "an n × n matrix");
    if n == 0 {
        return Vec::new();
    }
    let mut s = State::new(n, w);
    s.warm_start();
    let mut unmatched = s.mate.iter().filter(|&&m| m == NONE).count();
    while unmatched > 0 {
        s.stage();
        unmatched -= 2;
        stage(unmatched);
    }
    s.mate
}

/// The algorithm's state. Indexes `0..n` are vertices, `n..2n` blossoms
/// (a blossom is an odd cycle of vertices and blossoms shrunk into one).
struct State<'a> {
    n: usize,
    /// Weights, row-major (doubled where read: `w2`).
    w: &'a [i64],
    /// The vertex matched to each vertex, or `NONE`.
    mate: Vec<usize>,
    /// The dual of each vertex and blossom, in units where an edge's slack
    /// is `dual[u] + dual[v] - 2·(2·w(u,v))` (plus twice the duals of the
    /// blossoms holding both ends): a vertex's dual is twice its LP dual
    /// for the doubled weights, a blossom's is its LP dual.
    dual: Vec<i64>,
    /// Label of each vertex and blossom in this stage's forest.
    label: Vec<u8>,
    /// The edge through which a top-level blossom (or a vertex) got its
    /// label: `(vertex of the labelling neighbour, vertex of this one)`;
    /// `NO_EDGE` for a root.
    label_edge: Vec<Edge>,
    /// The top-level blossom (or the vertex itself) holding each vertex.
    in_blossom: Vec<usize>,
    /// The blossom immediately holding each vertex or blossom, or `NONE`.
    parent: Vec<usize>,
    /// A blossom's sub-blossoms around its cycle, the one holding its base
    /// first.
    children: Vec<Vec<usize>>,
    /// `edges[b][i]` joins `children[b][i]` and `children[b][i + 1]` (the
    /// last wraps to the first), as `(vertex in the i-th, vertex in the
    /// next)`.
    edges: Vec<Vec<Edge>>,
    /// A blossom's base vertex (`NONE`: the blossom number is unused).
    base: Vec<usize>,
    /// For a vertex not in the forest: its least-slack edge to an outer
    /// vertex, as `(outer vertex, it)`. For an outer top-level blossom: its
    /// least-slack edge to another outer blossom, as `(inside, outside)`.
    best_edge: Vec<Edge>,
    /// For an outer blossom: its least-slack edge to each other outer
    /// blossom, as `(inside, outside)` (`None`: not computed, read the
    /// leaves' rows instead).
    best_edges: Vec<Option<Vec<Edge>>>,
    unused: Vec<usize>,
    /// Outer vertices whose edges are still to be scanned.
    queue: Vec<usize>,
    /// Blossoms met while looking for a common ancestor.
    marked: Vec<bool>,
}

impl<'a> State<'a> {
    fn new(n: usize, w: &'a [i64]) -> State<'a> {
        State {
            n,
            w,
            mate: vec![NONE; n],
            dual: vec![0; 2 * n],
            label: vec![FREE; 2 * n],
            label_edge: vec![NO_EDGE; 2 * n],
            in_blossom: (0..n).collect(),
            parent: vec![NONE; 2 * n],
            children: vec![Vec::new(); 2 * n],
            edges: vec![Vec::new(); 2 * n],
            base: (0..n).chain(std::iter::repeat_n(NONE, n)).collect(),
            best_edge: vec![NO_EDGE; 2 * n],
            best_edges: vec![None; 2 * n],
            unused: (n..2 * n).rev().collect(),
            queue: Vec::new(),
            marked: vec![false; 2 * n],
        }
    }

    /// Twice the weight of edge `(u, v)`.
    #[inline]
    fn w2(&self, u: usize, v: usize) -> i64 {
        2 * self.w[u * self.n + v]
    }

    /// The slack of edge `(u, v)` between two different top-level blossoms
    /// (twice its slack in the doubled weights' units).
    #[inline]
    fn slack(&self, (u, v): Edge) -> i64 {
        self.dual[u] + self.dual[v] - 2 * self.w2(u, v)
    }

    /// Every vertex starts with the dual of its heaviest edge (its doubled
    /// weight `2·w`): `dual[u] + dual[v] >= 2·2·w(u,v)` for every edge, so
    /// every slack is at least 0, and every dual is even. Mutually heaviest pairs are then tight and
    /// matched at once, in vertex order.
    fn warm_start(&mut self) {
        let n = self.n;
        for u in 0..n {
            self.dual[u] = (0..n)
                .filter(|&v| v != u)
                .map(|v| self.w2(u, v))
                .max()
                .expect("at least two vertices");
        }
        for u in 0..n {
            if self.mate[u] != NONE {
                continue;
            }
            if let Some(v) = (u + 1..n).find(|&v| self.mate[v] == NONE && self.slack((u, v)) == 0) {
                self.mate[u] = v;
                self.mate[v] = u;
            }
        }
    }

    /// The vertices of blossom (or vertex) `b`, into `out`.
    fn leaves(&self, b: usize, out: &mut Vec<usize>) {
        let mut stack = vec![b];
        while let Some(x) = stack.pop() {
            if x < self.n {
                out.push(x);
            } else {
                stack.extend(self.children[x].iter().copied());
            }
        }
    }

    fn leaves_of(&self, b: usize) -> Vec<usize> {
        let mut out = Vec::new();
        self.leaves(b, &mut out);
        out
    }

    /// Label the top-level blossom holding `w` (reached from `v`, or a root
    /// when `v` is `NONE`); an inner one's mate becomes outer.
    fn assign_label(&mut self, w: usize, t: u8, v: usize) {
        let (mut w, mut t, mut v) = (w, t, v);
        loop {
            let b = self.in_blossom[w];
            self.label[w] = t;
            self.label[b] = t;
            let e = if v == NONE { NO_EDGE } else { (v, w) };
            self.label_edge[w] = e;
            self.label_edge[b] = e;
            self.best_edge[w] = NO_EDGE;
            self.best_edge[b] = NO_EDGE;
            if t == OUTER {
                let mut leaves = std::mem::take(&mut self.queue);
                self.leaves(b, &mut leaves);
                self.queue = leaves;
                return;
            }
            let base = self.base[b];
            (w, t, v) = (self.mate[base], OUTER, base);
        }
    }

    /// From the outer vertices `v` and `w`, joined by a tight edge, back to
    /// their roots: the base of the blossom their paths meet in, or `None`
    /// when they are in different trees (an augmenting path).
    fn scan_blossom(&mut self, v: usize, w: usize) -> Option<usize> {
        let mut path = Vec::new();
        let (mut v, mut w) = (v, w);
        let mut found = None;
        while v != NONE {
            let b = self.in_blossom[v];
            if self.marked[b] {
                found = Some(self.base[b]);
                break;
            }
            self.marked[b] = true;
            path.push(b);
            v = if self.label_edge[b] == NO_EDGE {
                NONE
            } else {
                // An outer blossom's label came from its inner neighbour,
                // whose own label came from the next outer blossom up.
                let inner = self.in_blossom[self.label_edge[b].0];
                self.label_edge[inner].0
            };
            if w != NONE {
                std::mem::swap(&mut v, &mut w);
            }
        }
        for b in path {
            self.marked[b] = false;
        }
        found
    }

    /// Shrink the cycle closed by the tight edge `(v, w)` between two outer
    /// blossoms of one tree, whose paths meet at `base`, into a new outer
    /// blossom.
    fn add_blossom(&mut self, base: usize, v: usize, w: usize) {
        let bb = self.in_blossom[base];
        let b = self.unused.pop().expect("at most n/2 blossoms at a time");
        self.base[b] = base;
        self.parent[b] = NONE;
        self.parent[bb] = b;
        // From v's side up to the base: each blossom's label edge goes
        // (vertex of the one above, vertex of this one).
        let (mut up, mut up_edges) = (Vec::new(), Vec::new());
        let mut bv = self.in_blossom[v];
        while bv != bb {
            self.parent[bv] = b;
            up.push(bv);
            up_edges.push(self.label_edge[bv]);
            bv = self.in_blossom[self.label_edge[bv].0];
        }
        let mut children = vec![bb];
        children.extend(up.iter().rev());
        let mut edges: Vec<Edge> = up_edges.into_iter().rev().collect();
        edges.push((v, w));
        let mut bw = self.in_blossom[w];
        while bw != bb {
            self.parent[bw] = b;
            children.push(bw);
            let (above, inside) = self.label_edge[bw];
            edges.push((inside, above));
            bw = self.in_blossom[above];
        }
        debug_assert!(children.len() % 2 == 1 && children.len() >= 3);
        self.label[b] = OUTER;
        self.label_edge[b] = self.label_edge[bb];
        self.dual[b] = 0;
        let leaves = {
            let mut l = Vec::new();
            for &c in &children {
                self.leaves(c, &mut l);
            }
            l
        };
        for &x in &leaves {
            if self.label[self.in_blossom[x]] == INNER {
                // Inner vertices become outer: their edges are scanned.
                self.queue.push(x);
            }
            self.in_blossom[x] = b;
        }
        // The new blossom's least-slack edge to each other outer blossom,
        // from its children's lists, or from the rows of children that
        // had none (inner ones).
        let mut best_to: Vec<Edge> = vec![NO_EDGE; 2 * self.n];
        let mut touched = Vec::new();
        for &c in &children {
            let list: Vec<Edge> = match self.best_edges[c].take() {
                Some(list) => list,
                None => self
                    .leaves_of(c)
                    .into_iter()
                    .flat_map(|i| (0..self.n).map(move |j| (i, j)))
                    .collect(),
            };
            for (i, j) in list {
                let bj = self.in_blossom[j];
                if bj == b || self.label[bj] != OUTER {
                    continue;
                }
                if best_to[bj] == NO_EDGE {
                    touched.push(bj);
                    best_to[bj] = (i, j);
                } else if self.slack((i, j)) < self.slack(best_to[bj]) {
                    best_to[bj] = (i, j);
                }
            }
            self.best_edge[c] = NO_EDGE;
        }
        let list: Vec<Edge> = touched.iter().map(|&bj| best_to[bj]).collect();
        self.best_edge[b] = list
            .iter()
            .copied()
            .min_by_key(|&e| self.slack(e))
            .unwrap_or(NO_EDGE);
        self.best_edges[b] = Some(list);
        self.children[b] = children;
        self.edges[b] = edges;
    }

    /// Undo blossom `b`: its children become top-level. Mid-stage (`b` an
    /// inner blossom whose dual reached zero) the children along the even
    /// path from where it was entered to its base keep the tree's labels;
    /// at the end of a stage, children with a zero dual are undone too.
    fn expand_blossom(&mut self, b: usize, end_of_stage: bool) {
        let mut stack = vec![b];
        while let Some(b) = stack.pop() {
            for i in 0..self.children[b].len() {
                let c = self.children[b][i];
                self.parent[c] = NONE;
                if c < self.n {
                    self.in_blossom[c] = c;
                } else if end_of_stage && self.dual[c] == 0 {
                    stack.push(c);
                } else {
                    for x in self.leaves_of(c) {
                        self.in_blossom[x] = c;
                    }
                }
            }
            if !end_of_stage && self.label[b] == INNER {
                self.relabel_expanded(b);
            }
            self.label[b] = FREE;
            self.label_edge[b] = NO_EDGE;
            self.children[b] = Vec::new();
            self.edges[b] = Vec::new();
            self.base[b] = NONE;
            self.best_edge[b] = NO_EDGE;
            self.best_edges[b] = None;
            self.unused.push(b);
        }
    }

    /// The labels of an inner blossom's children once it is undone: the
    /// path from the child it was entered by to its base child alternates
    /// inner and outer (the base child stays inner, matched to the outer
    /// vertex above); the other children are inner if an outer vertex
    /// reaches one of their vertices by a tight edge, else free.
    fn relabel_expanded(&mut self, b: usize) {
        let k = self.children[b].len();
        let entry_edge = self.label_edge[b];
        let entry = self.in_blossom[entry_edge.1];
        let j = self.children[b]
            .iter()
            .position(|&c| c == entry)
            .expect("the entry child is a child");
        // Matched edges inside pair children 1-2, 3-4, ...: from an odd
        // position the path to the base runs forwards, from an even one
        // backwards.
        let forward = j % 2 == 1;
        let step = |p: usize| {
            if forward {
                (p + 1) % k
            } else {
                (p + k - 1) % k
            }
        };
        let (mut pos, mut edge) = (j, entry_edge);
        while pos != 0 {
            self.label[edge.1] = FREE;
            self.assign_label(edge.1, INNER, edge.0);
            // Its mate's child (one step on) is outer now; the next inner
            // child is two steps on, through the edge between them.
            let s = step(pos);
            let t = step(s);
            edge = if forward {
                self.edges[b][s]
            } else {
                let (in_t, in_s) = self.edges[b][t];
                (in_s, in_t)
            };
            pos = t;
        }
        // The base child: inner, without labelling its mate again (the
        // outer vertex above, labelled already).
        let base_child = self.children[b][0];
        self.label[edge.1] = INNER;
        self.label[base_child] = INNER;
        self.label_edge[edge.1] = edge;
        self.label_edge[base_child] = edge;
        self.best_edge[base_child] = NO_EDGE;
        // The rest, from the base child on round to the entry child.
        let mut pos = step(0);
        while self.children[b][pos] != entry {
            let c = self.children[b][pos];
            pos = step(pos);
            if self.label[c] == OUTER {
                continue;
            }
            let reached = self
                .leaves_of(c)
                .into_iter()
                .find(|&x| self.label[x] != FREE);
            if let Some(x) = reached {
                let from = self.label_edge[x].0;
                self.label[x] = FREE;
                self.assign_label(x, INNER, from);
            }
        }
    }

    /// Make `v` the base of blossom `b`, swapping matched and unmatched
    /// edges along the even path inside it from `v`'s child to the base.
    fn augment_blossom(&mut self, b: usize, v: usize) {
        let mut stack = vec![(b, v)];
        while let Some((b, v)) = stack.pop() {
            let mut t = v;
            while self.parent[t] != b {
                t = self.parent[t];
            }
            if t >= self.n {
                stack.push((t, v));
            }
            let k = self.children[b].len();
            let i = self.children[b]
                .iter()
                .position(|&c| c == t)
                .expect("a child of b");
            // Removing child i leaves a path of the others, matched
            // consecutively: from an odd i the edges i+1, i+3, ..., k-1
            // become matched, from an even i the edges 0, 2, ..., i-2.
            let matched = if i % 2 == 1 {
                (i + 1..k).step_by(2)
            } else {
                (0..i.saturating_sub(1)).step_by(2)
            };
            for e in matched {
                let (x, y) = self.edges[b][e];
                let (cx, cy) = (self.children[b][e], self.children[b][(e + 1) % k]);
                if cx >= self.n {
                    stack.push((cx, x));
                }
                if cy >= self.n {
                    stack.push((cy, y));
                }
                self.mate[x] = y;
                self.mate[y] = x;
            }
            self.children[b].rotate_left(i);
            self.edges[b].rotate_left(i);
            self.base[b] = v;
        }
    }

    /// Augment along the path through the tight edge `(v, w)` between two
    /// trees: from each end back to its root.
    fn augment(&mut self, v: usize, w: usize) {
        for (s, j) in [(v, w), (w, v)] {
            let (mut s, mut j) = (s, j);
            loop {
                let bs = self.in_blossom[s];
                if bs >= self.n {
                    self.augment_blossom(bs, s);
                }
                self.mate[s] = j;
                if self.label_edge[bs] == NO_EDGE {
                    break;
                }
                let t = self.label_edge[bs].0;
                let bt = self.in_blossom[t];
                let (next_s, next_j) = self.label_edge[bt];
                if bt >= self.n {
                    self.augment_blossom(bt, next_j);
                }
                self.mate[next_j] = next_s;
                (s, j) = (next_s, next_j);
            }
        }
    }

    /// One stage: grow the forest from every unmatched vertex, changing
    /// duals when no tight edge is left, until an augmenting path is found
    /// and used.
    fn stage(&mut self) {
        let n = self.n;
        self.label.fill(FREE);
        self.label_edge.fill(NO_EDGE);
        self.best_edge.fill(NO_EDGE);
        for b in n..2 * n {
            self.best_edges[b] = None;
        }
        self.queue.clear();
        for v in 0..n {
            if self.mate[v] == NONE && self.label[self.in_blossom[v]] == FREE {
                self.assign_label(v, OUTER, NONE);
            }
        }
        loop {
            if self.scan_queue() {
                break;
            }
            self.change_duals();
        }
        // Outer blossoms whose dual is zero are no longer needed.
        for b in n..2 * n {
            if self.base[b] != NONE
                && self.parent[b] == NONE
                && self.label[b] == OUTER
                && self.dual[b] == 0
            {
                self.expand_blossom(b, true);
            }
        }
    }

    /// Scan the queued outer vertices' edges: grow the forest along tight
    /// ones, shrink blossoms, and keep each least-slack edge. True once an
    /// augmentation was made.
    fn scan_queue(&mut self) -> bool {
        let n = self.n;
        while let Some(v) = self.queue.pop() {
            for w in 0..n {
                let (bv, bw) = (self.in_blossom[v], self.in_blossom[w]);
                if bv == bw {
                    continue;
                }
                let k = self.slack((v, w));
                if k <= 0 {
                    debug_assert_eq!(k, 0, "duals stay feasible");
                    if self.label[bw] == FREE {
                        self.assign_label(w, INNER, v);
                    } else if self.label[bw] == OUTER {
                        match self.scan_blossom(v, w) {
                            Some(base) => self.add_blossom(base, v, w),
                            None => {
                                self.augment(v, w);
                                return true;
                            }
                        }
                    } else if self.label[w] == FREE {
                        // w is inside an inner blossom: remember that an
                        // outer vertex reaches it, for when it is undone.
                        self.label[w] = INNER;
                        self.label_edge[w] = (v, w);
                    }
                } else if self.label[bw] == OUTER {
                    let be = self.best_edge[bv];
                    if be == NO_EDGE || k < self.slack(be) {
                        self.best_edge[bv] = (v, w);
                    }
                } else if self.label[w] == FREE {
                    let be = self.best_edge[w];
                    if be == NO_EDGE || k < self.slack(be) {
                        self.best_edge[w] = (v, w);
                    }
                }
            }
        }
        false
    }

    /// No tight edge is left to grow along: move the duals by the largest
    /// amount that keeps them feasible, which makes an edge tight or an
    /// inner blossom's dual zero, and act on it.
    fn change_duals(&mut self) {
        let n = self.n;
        enum Step {
            None,
            /// A free vertex's edge to an outer one became tight.
            ToFree(Edge),
            /// An edge between two outer blossoms became tight.
            Between(Edge),
            /// An inner blossom's dual reached zero.
            Expand(usize),
        }
        let (mut delta, mut step) = (i64::MAX, Step::None);
        for v in 0..n {
            let e = self.best_edge[v];
            if self.label[self.in_blossom[v]] == FREE && e != NO_EDGE {
                let d = self.slack(e);
                if d < delta {
                    (delta, step) = (d, Step::ToFree(e));
                }
            }
        }
        for b in 0..2 * n {
            let e = self.best_edge[b];
            if self.parent[b] == NONE && self.label[b] == OUTER && e != NO_EDGE {
                let d = self.slack(e);
                debug_assert!(d % 2 == 0, "outer vertices share a parity");
                if d / 2 < delta {
                    (delta, step) = (d / 2, Step::Between(e));
                }
            }
        }
        for b in n..2 * n {
            if self.base[b] != NONE
                && self.parent[b] == NONE
                && self.label[b] == INNER
                && self.dual[b] < delta
            {
                (delta, step) = (self.dual[b], Step::Expand(b));
            }
        }
        assert!(
            !matches!(step, Step::None),
            "a complete graph with an unmatched pair always has an edge to tighten"
        );
        for v in 0..n {
            match self.label[self.in_blossom[v]] {
                OUTER => self.dual[v] -= delta,
                INNER => self.dual[v] += delta,
                _ => {}
            }
        }
        for b in n..2 * n {
            if self.base[b] != NONE && self.parent[b] == NONE {
                match self.label[b] {
                    OUTER => self.dual[b] += delta,
                    INNER => self.dual[b] -= delta,
                    _ => {}
                }
            }
        }
        match step {
            Step::ToFree((a, c)) => {
                let outer = if self.label[self.in_blossom[a]] == OUTER {
                    a
                } else {
                    c
                };
                self.queue.push(outer);
            }
            Step::Between((a, _)) => self.queue.push(a),
            Step::Expand(b) => self.expand_blossom(b, false),
            Step::None => unreachable!("asserted above"),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The weight of `mate`, checked to be a perfect matching.
    fn weight(n: usize, w: &[i64], mate: &[usize]) -> i64 {
        assert_eq!(mate.len(), n);
        let mut total = 0;
        for (u, &v) in mate.iter().enumerate() {
            assert!(v < n && v != u && mate[v] == u, "{mate:?}");
            if u < v {
                total += w[u * n + v];
            }
        }
        total
    }

    /// The best perfect matching's weight by trying every one.
    fn brute_force(n: usize, w: &[i64]) -> i64 {
        fn go(left: &mut Vec<usize>, n: usize, w: &[i64]) -> i64 {
            let Some(first) = left.pop() else { return 0 };
            let mut best = i64::MIN;
            for k in 0..left.len() {
                let partner = left.remove(k);
                best = best.max(w[first * n + partner] + go(left, n, w));
                left.insert(k, partner);
            }
            left.push(first);
            best
        }
        go(&mut (0..n).collect(), n, w)
    }

    /// Run to the end and check the optimum's certificate: every edge's
    /// slack (with the blossoms holding both ends) is not negative, every
    /// matched edge is tight, every blossom's dual is not negative, and the
    /// dual objective equals the matching's weight. Any matching with such
    /// duals is a maximum-weight perfect matching, whatever the algorithm
    /// did to get there.
    pub(crate) fn solve_and_certify(n: usize, w: &[i64]) -> Vec<usize> {
        let mut s = State::new(n, w);
        s.warm_start();
        while s.mate.contains(&NONE) {
            s.stage();
        }
        // The blossoms holding each vertex, innermost first.
        let chain = |v: usize| {
            let mut c = Vec::new();
            let mut b = s.parent[v];
            while b != NONE {
                c.push(b);
                b = s.parent[b];
            }
            c
        };
        let chains: Vec<Vec<usize>> = (0..n).map(chain).collect();
        for u in 0..n {
            for v in u + 1..n {
                let shared: i64 = chains[u]
                    .iter()
                    .filter(|b| chains[v].contains(b))
                    .map(|&b| s.dual[b])
                    .sum();
                let slack = s.dual[u] + s.dual[v] + 2 * shared - 4 * w[u * n + v];
                assert!(slack >= 0, "edge ({u}, {v}) has slack {slack}");
                if s.mate[u] == v {
                    assert_eq!(slack, 0, "matched edge ({u}, {v}) is tight");
                }
            }
        }
        let mut dual_objective: i64 = s.dual[..n].iter().sum();
        for b in n..2 * n {
            if s.base[b] != NONE {
                assert!(s.dual[b] >= 0, "blossom {b}'s dual {}", s.dual[b]);
                let size = s.leaves_of(b).len() as i64;
                dual_objective += 2 * s.dual[b] * (size / 2);
            }
        }
        // Both sides in the slack's units: twice the doubled weights.
        assert_eq!(dual_objective, 4 * weight(n, w, &s.mate), "not optimal");
        s.mate
    }

    fn symmetric(n: usize, upper: &[i64]) -> Vec<i64> {
        let mut w = vec![0; n * n];
        let mut k = 0;
        for i in 0..n {
            for j in i + 1..n {
                w[i * n + j] = upper[k % upper.len()];
                w[j * n + i] = upper[k % upper.len()];
                k += 1;
            }
        }
        w
    }

    #[test]
    fn a_hand_checked_four_vertex_matching() {
        // 0-1 (15) with 2-3 (14) = 29 beats 0-2 + 1-3 (25) and 0-3 + 1-2.
        let w = symmetric(4, &[15, 12, 11, 11, 13, 14]);
        let mate = max_weight_perfect_matching(4, &w, &mut |_| {});
        assert_eq!(mate, [1, 0, 3, 2]);
        // Negative weights (the worst schedule) work as well.
        let neg: Vec<i64> = w.iter().map(|x| -x).collect();
        let mate = max_weight_perfect_matching(4, &neg, &mut |_| {});
        assert_eq!(weight(4, &neg, &mate), -22);
    }

    #[test]
    fn blossoms_nest_and_are_undone() {
        // Two triangles of heavy edges joined by light ones: the optimum
        // must break both odd cycles, which the algorithm first shrinks.
        for n in [6, 8, 10, 12, 14] {
            let mut w = vec![1; n * n];
            for t in 0..n / 3 {
                for (a, b) in [(0, 1), (1, 2), (0, 2)] {
                    let (a, b) = (3 * t + a, 3 * t + b);
                    w[a * n + b] = 10;
                    w[b * n + a] = 10;
                }
            }
            let mate = solve_and_certify(n, &w);
            assert_eq!(weight(n, &w, &mate), brute_force(n, &w), "n {n}");
        }
    }

    #[test]
    fn stages_are_reported() {
        let w = symmetric(8, &[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]);
        let mut seen = Vec::new();
        max_weight_perfect_matching(8, &w, &mut |left| seen.push(left));
        assert!(!seen.is_empty() && seen.len() <= 4, "{seen:?}");
        assert_eq!(seen.last(), Some(&0));
        assert!(seen.windows(2).all(|p| p[1] == p[0] - 2), "{seen:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Brute force up to 12 vertices, on few distinct weights (many
        /// ties, many blossoms) and on many.
        #[test]
        fn the_optimum_is_brute_force(
            n in (1usize..=6).prop_map(|h| 2 * h),
            few in prop::collection::vec(0i64..4, 66),
            many in prop::collection::vec(-1_000_000i64..1_000_000, 66),
        ) {
            for upper in [&few, &many] {
                let w = symmetric(n, upper);
                let mate = solve_and_certify(n, &w);
                prop_assert_eq!(weight(n, &w, &mate), brute_force(n, &w));
            }
        }

        /// Beyond brute force: the dual certificate proves the optimum for
        /// larger graphs, ties and all.
        #[test]
        fn larger_matchings_carry_a_certificate_of_optimality(
            n in (10usize..=60).prop_map(|h| 2 * h),
            upper in prop::collection::vec(0i64..30, 1770),
        ) {
            let w = symmetric(n, &upper);
            solve_and_certify(n, &w);
        }
    }
}
