//! `bundle --format html`: the grouped reports handed to the HTML renderer
//! (`report::html::bundle_page`), in the markdown bundle's order.

use super::{file_name, grouped, BundleRequest, Section, Skipped};
use crate::dates::utc_text;
use crate::report::html::bundle_page::{
    bundle_page, BundleBody, BundleDoc, BundleModel, BundleReport,
};

/// The bundle as one HTML page (`report::html::bundle_page`), in the markdown's order.
pub(super) fn html_page(
    request: &BundleRequest,
    sections: &[Section],
    skipped: &[Skipped],
) -> String {
    let models = grouped(sections)
        .into_iter()
        .map(|(name, label, reports)| BundleModel {
            name,
            label,
            reports: reports
                .into_iter()
                .map(|s| BundleReport {
                    engine: &s.engine,
                    file: file_name(&s.path),
                    source: s.path.display().to_string(),
                    body: match &s.report {
                        Some((report, json)) => BundleBody::Report(report, json),
                        None => BundleBody::Text(&s.body),
                    },
                })
                .collect(),
        })
        .collect();
    bundle_page(&BundleDoc {
        title: &request.title,
        generated: utc_text(request.generated_at),
        include_toc: request.include_toc,
        models,
        skipped: skipped
            .iter()
            .map(|s| (s.path.display().to_string(), s.reason.clone()))
            .collect(),
    })
}
