use super::application::{fixed_prefix, is_sim_app};
use std::path::PathBuf;

#[test]
fn staging_goes_above_the_first_placeholder() {
    assert_eq!(fixed_prefix("out/%hostname%/x"), PathBuf::from("out"));
    assert_eq!(fixed_prefix("/a/b"), PathBuf::from("/a/b"));
    assert_eq!(fixed_prefix("%env{HOME}%/x"), PathBuf::from("."));
    assert_eq!(fixed_prefix("."), PathBuf::from("."));
}

#[test]
fn sim_app_is_recognised_by_file_name() {
    assert!(is_sim_app("/x/target/debug/kreplay-sim-app"));
    assert!(!is_sim_app("./my-app"));
}
