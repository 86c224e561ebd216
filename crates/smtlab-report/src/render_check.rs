//! The headless-browser hook every HTML page of smtlab ends with
//! (`render_check.html`): a paragraph that the page's own script fills with
//! how many chart figures the browser laid out, so the tests that open a
//! report in Chromium can tell a page whose charts all drew from one that
//! only loaded. One snippet for the run report (`report_html` passes it to
//! its template, rendered) and the fleet report (`fleet_report`).

/// The snippet, a minijinja template over `chart_count`.
pub(crate) const TEMPLATE: &str = include_str!("render_check.html");

/// The snippet for a page with `chart_count` charts.
pub(crate) fn html(chart_count: usize) -> String {
    minijinja::Environment::new()
        .render_str(TEMPLATE, minijinja::context! { chart_count })
        .expect("render_check.html is a fixed, valid template")
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_the_charts_and_carries_the_script() {
        let h = super::html(3);
        assert!(
            h.contains(r#"<p id="render-check" class="muted" data-expected="3">3 chart(s).</p>"#)
        );
        assert!(h.contains(r#"document.querySelectorAll("figure.chart")"#));
        assert!(!h.contains("{#"), "the template's comment stays out: {h}");
    }
}
