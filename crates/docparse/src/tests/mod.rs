//! Tests of the crate against its public surface (and, where marked, the
//! real local stack); compiled into its unit-test binary, not a binary of
//! their own.

mod geometry;
mod hostile;
pub(crate) mod hostile_inputs;
pub(crate) mod image_inputs;
mod images;
mod parse;
pub(crate) mod peak;
mod sheet;
pub(crate) mod sheet_inputs;
pub(crate) mod slide_inputs;
mod slides;
