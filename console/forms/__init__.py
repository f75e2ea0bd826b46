"""The console's forms, one module per area as in console/views/."""
