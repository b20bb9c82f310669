"""Run-time pieces shared by the backends: data tables, feature frames, encodings, expression evaluation."""
