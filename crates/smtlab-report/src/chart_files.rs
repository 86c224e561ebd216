//! `charts/NAME.svg` and `charts/NAME.png`: every chart drawn once, written
//! as both files (for slides and papers), and kept for the writers that
//! inline it.

use std::path::{Path, PathBuf};

use crate::charts::ChartSpec;
use crate::draw;
use crate::error::ReportError;
use crate::writer::{write_file, DrawnChart};

/// Draw every chart into `chart_dir`; the charts drawn and the files
/// written (SVG then PNG of each).
pub(crate) fn draw_all(
    specs: Vec<ChartSpec>,
    chart_dir: &Path,
) -> Result<(Vec<DrawnChart>, Vec<PathBuf>), ReportError> {
    let mut drawn = Vec::new();
    let mut files = Vec::new();
    for spec in specs {
        let svg_path = chart_dir.join(format!("{}.svg", spec.name));
        let png_path = chart_dir.join(format!("{}.png", spec.name));
        let svg = draw::render_svg(&spec.plot).map_err(|error| ReportError::Chart {
            path: svg_path.clone(),
            error,
        })?;
        write_file(&svg_path, svg.as_bytes())?;
        draw::render_png(&spec.plot, &png_path).map_err(|error| ReportError::Chart {
            path: png_path.clone(),
            error,
        })?;
        files.push(svg_path);
        files.push(png_path);
        drawn.push(DrawnChart { spec, svg });
    }
    Ok((drawn, files))
}
