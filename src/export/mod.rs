//! Exporting a session: `export_html` (`rpc-protocol.md` §3.9) writes a self-contained HTML page.

pub mod html;
pub mod output_path;

pub use html::{export_html, render_html, ExportError};
