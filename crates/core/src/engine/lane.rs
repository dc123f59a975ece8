//! One device's lane: its replay gate and its open unit (the methods are in `lanes`).

use crate::backend::{Backend, DeviceId};
use crate::engine::unit::parts::OpenUnit;
use crate::gate::ReplayGate;
use std::sync::{Arc, Mutex};

/// Every device's lane, in device order.
pub(super) type Lanes<K> = std::collections::BTreeMap<DeviceId, Arc<Lane<K>>>;

/// One device's replay gate and its open unit (`None` between units).
pub(super) struct Lane<K: Backend> {
    pub(super) gate: Arc<ReplayGate>,
    pub(super) open_unit: Mutex<Option<OpenUnit<K>>>,
}
