//! The moderators' level histogram over time: how the moderated vectors' time at each
//! level moves through the run (under load, at QD1, after the load drops).

use crate::RunReport;
use crate::model::pct;
use std::fmt::Write;

/// Rows the text report shows at most: intervals are merged to fit.
const MAX_ROWS: usize = 12;

/// The moderated vectors' time at each level per interval of the run, summed over the
/// vectors: (interval width ns, [interval][level] ns). None without a moderator.
pub fn combined_course(r: &RunReport) -> Option<(u64, Vec<Vec<u64>>)> {
    let courses: Vec<_> = r
        .vectors
        .iter()
        .filter(|v| v.messages > 0 || v.handled() > 0)
        .filter_map(|v| v.moderation.as_ref())
        .filter(|m| m.course_ns > 0 && !m.course.is_empty())
        .collect();
    // A vector that outlived the others widened its intervals more: use the widest.
    let width = courses.iter().map(|m| m.course_ns).max()?;
    let levels = courses.iter().map(|m| m.level_ns.len()).max()?;
    let mut sum: Vec<Vec<u64>> = Vec::new();
    for m in courses {
        let per = (width / m.course_ns) as usize;
        for (i, interval) in m.course.iter().enumerate() {
            let at = i / per.max(1);
            if sum.len() <= at {
                sum.resize(at + 1, vec![0; levels]);
            }
            sum[at].iter_mut().zip(interval).for_each(|(a, b)| *a += b);
        }
    }
    Some((width, sum))
}

/// "Moderation over time": one row per stretch of the run, the share of the moderated
/// vectors' time at each level in it (whole run, ramp_time included, as the per-vector
/// histogram above).
pub fn course_section(out: &mut String, r: &RunReport) {
    let Some((width, course)) = combined_course(r) else {
        return;
    };
    let per_row = course.len().div_ceil(MAX_ROWS).max(1);
    let rows: Vec<Vec<u64>> = course
        .chunks(per_row)
        .map(|chunk| {
            let mut row = vec![0; chunk[0].len()];
            for interval in chunk {
                row.iter_mut().zip(interval).for_each(|(a, b)| *a += b);
            }
            row
        })
        .collect();
    let used = rows
        .iter()
        .filter_map(|row| row.iter().rposition(|&t| t > 0))
        .max()
        .map_or(1, |l| l + 1);
    let step = width * per_row as u64;
    let _ = writeln!(
        out,
        "Moderation over time: the moderated vectors' time at each level, per {}",
        crate::text::human_ns(step)
    );
    let header: Vec<String> = (0..used)
        .map(|l| format!("{:>7}", format!("L{l}")))
        .collect();
    let _ = writeln!(out, "  {:>10} {}", "from", header.join(""));
    for (i, row) in rows.iter().enumerate() {
        let total: u64 = row.iter().sum();
        let cells: Vec<String> = row[..used]
            .iter()
            .map(|&t| format!("{:>6.1}%", pct(t, total)))
            .collect();
        let _ = writeln!(
            out,
            "  {:>10} {}",
            crate::text::human_ns(i as u64 * step),
            cells.join("")
        );
    }
    out.push('\n');
}
