//! A small SVG of a training log: training loss by step (left axis) and dev MAP at each
//! evaluation (right axis), written by hand so no plotting library is needed.

use serde_json::Value;

const W: f64 = 720.0;
const H: f64 = 360.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 60.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 40.0;

/// Renders the `loss` entries and the `dev_MAP` entries of a training log (by `step`).
pub fn training_svg(entries: &[Value]) -> String {
    let series = |key: &str| -> Vec<(f64, f64)> {
        entries
            .iter()
            .filter_map(|e| Some((e.get("step")?.as_f64()?, e.get(key)?.as_f64()?)))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect()
    };
    let loss = series("loss");
    let map = series("dev_MAP");
    let max_step = loss.iter().chain(&map).map(|p| p.0).fold(1.0f64, f64::max);
    let max_loss = loss.iter().map(|p| p.1).fold(1e-9f64, f64::max);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |s: f64| LEFT + pw * s / max_step;
    let y_loss = |l: f64| TOP + ph * (1.0 - l / max_loss);
    let y_map = |m: f64| TOP + ph * (1.0 - m.clamp(0.0, 1.0));
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>\n"
    );
    for i in 0..=4 {
        let f = i as f64 / 4.0;
        let yy = TOP + ph * (1.0 - f);
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#1f77b4\">{:.3}</text>\n",
            LEFT - 4.0,
            yy + 4.0,
            max_loss * f
        );
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#d62728\">{:.2}</text>\n",
            W - RIGHT + 4.0,
            yy + 4.0,
            f
        );
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{:.0}</text>\n",
            LEFT + pw * f,
            H - BOTTOM + 16.0,
            max_step * f
        );
    }
    let polyline = |points: &[(f64, f64)], y: &dyn Fn(f64) -> f64, color: &str| -> String {
        let pts: Vec<String> = points
            .iter()
            .map(|&(s, v)| format!("{:.1},{:.1}", x(s), y(v)))
            .collect();
        format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
            pts.join(" ")
        )
    };
    svg += &polyline(&loss, &y_loss, "#1f77b4");
    svg += &polyline(&map, &y_map, "#d62728");
    for &(s, m) in &map {
        svg += &format!(
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#d62728\"/>\n",
            x(s),
            y_map(m)
        );
    }
    svg += &format!(
        "<text x=\"{LEFT}\" y=\"18\" fill=\"#1f77b4\">training loss (left)</text>\n\
         <text x=\"{:.1}\" y=\"18\" text-anchor=\"end\" fill=\"#d62728\">dev MAP (right)</text>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">optimizer step</text>\n</svg>\n",
        W - RIGHT,
        LEFT + pw / 2.0,
        H - 6.0
    );
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_both_series() {
        let log = vec![
            serde_json::json!({"step": 10, "loss": 0.6}),
            serde_json::json!({"step": 20, "loss": 0.3}),
            serde_json::json!({"eval": 1, "step": 20, "dev_MAP": 0.7}),
            serde_json::json!({"event": "start"}),
        ];
        let svg = training_svg(&log);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 1);
        // The MAP point sits at 70% of the plot height.
        assert!(svg.contains(&format!("cy=\"{:.1}\"", TOP + (H - TOP - BOTTOM) * 0.3)));
    }
}
