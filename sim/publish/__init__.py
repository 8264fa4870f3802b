"""One publish run: the world, the site and its traffic, checks compared side by side."""
