"""What users look at: reports, timelines, plots, notebook helpers."""
