//! The order a graph's nodes run in.

/// The order to run `n` nodes in, given `edges` (from, to) between them: every node after the
/// nodes it depends on, ties in the order the driver listed them. `None`: a cycle.
pub fn topological_order(n: usize, edges: &[(usize, usize)]) -> Option<Vec<usize>> {
    let mut waiting_on = vec![0usize; n];
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(from, to) in edges {
        waiting_on[to] += 1;
        after[from].push(to);
    }
    // A min-heap of ready nodes keeps the driver's order among independent nodes.
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
        .filter(|&i| waiting_on[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(node)) = ready.pop() {
        order.push(node);
        for &next in &after[node] {
            waiting_on[next] -= 1;
            if waiting_on[next] == 0 {
                ready.push(std::cmp::Reverse(next));
            }
        }
    }
    (order.len() == n).then_some(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_run_after_what_they_depend_on_in_listed_order_otherwise() {
        // 3 -> 0 -> 2, 1 free: 1 and 3 are ready first (1 listed first).
        assert_eq!(
            topological_order(4, &[(3, 0), (0, 2)]),
            Some(vec![1, 3, 0, 2])
        );
        assert_eq!(topological_order(3, &[]), Some(vec![0, 1, 2]));
        // A diamond: 0 -> {1, 2} -> 3.
        assert_eq!(
            topological_order(4, &[(0, 2), (0, 1), (1, 3), (2, 3)]),
            Some(vec![0, 1, 2, 3])
        );
        assert_eq!(topological_order(2, &[(0, 1), (1, 0)]), None);
        assert_eq!(topological_order(0, &[]), Some(vec![]));
    }
}
