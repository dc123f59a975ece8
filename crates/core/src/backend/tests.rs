use super::*;

#[test]
fn a_clock_varied_when_its_readings_differ_by_more_than_one_percent() {
    let with = |sm: [u32; 2], memory: [u32; 2]| UnitConditions {
        sm_clock_mhz: sm,
        memory_clock_mhz: memory,
        ..UnitConditions::default()
    };
    assert_eq!(with([0, 0], [0, 0]).varied_clock(), None);
    assert_eq!(with([1980, 1980], [3201, 3201]).varied_clock(), None);
    assert_eq!(with([1970, 1980], [3201, 3201]).varied_clock(), None);
    assert_eq!(
        with([1755, 1980], [3201, 3201]).varied_clock(),
        Some(("SM", [1755, 1980]))
    );
    assert_eq!(
        with([1980, 1980], [2619, 3201]).varied_clock(),
        Some(("memory", [2619, 3201]))
    );
}

#[test]
fn plans_number_executions_by_first_use_of_their_hardware_pass() {
    // Groups 0, 1, 2 share hardware pass 7; group 3 has pass 4.
    let (plan, order) = UnitPlan::from_hardware_passes(&[7, 7, 7, 4]);
    assert_eq!(plan.executions, 2);
    assert_eq!(plan.execution_of_pass, vec![0, 0, 0, 1]);
    assert_eq!(order, vec![7, 4]);
    // A hardware pass asked for twice is measured once.
    let (plan, _) = UnitPlan::from_hardware_passes(&[4, 7, 4]);
    assert_eq!(
        (plan.executions, plan.execution_of_pass),
        (2, vec![0, 1, 0])
    );
    assert_eq!(UnitPlan::one_per_pass(3).execution_of_pass, vec![0, 1, 2]);
    assert_eq!(UnitPlan::one_per_pass(0).executions, 1);
}

#[test]
fn a_hardware_pass_spanning_several_executions_takes_them_in_a_row() {
    // Group 1's hardware pass 9 needs 3 executions; groups 0 and 2 share pass 7.
    let span = |h: usize| if h == 9 { 3 } else { 1 };
    let (plan, order) = UnitPlan::from_hardware_passes_spanning(&[7, 9, 7, 4], span);
    assert_eq!(plan.executions, 5);
    assert_eq!(plan.execution_of_pass, vec![0, 1, 0, 4]);
    assert_eq!(order, vec![7, 9, 4]);
}
