//! Workflow definitions: the YAML body of a `!workflow` block turned into a
//! typed, validated step graph (a DAG), plus what a run needs to evaluate
//! it: templating (`{{inputs.x}}`, `{{steps.a.output}}`) and CEL guards.
//! Nothing here knows about tasks, models or HTTP; the runtime executes.
//! The dialect is documented in `docs/workflows.md`.

mod dag;
mod def;
mod duration;
mod fields;
mod guard;
mod parse;
mod step;
mod template;

pub use dag::{StepStatus, ready_steps};
pub use def::{Case, Definition, ErrorPolicy, Fallback, FinishStatus, Limits, Retry, Step, StepKind};
pub use duration::parse_duration;
pub use guard::{Guard, Scope};
pub use parse::{DefinitionError, parse, parse_known_valid};
pub use template::render;
