"""What keeps each link in step with its source on a schedule: `syncers` runs them at the
link's intervals; ACL sync, automatic mirrors and the filter preview beside it."""
