"""Image datasets: intake of image archives and folders within limits, the derived table of each image (derive),
the image cache, where images come from (sources, origins).
"""
