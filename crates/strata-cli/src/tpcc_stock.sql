CREATE TABLE stock (
    s_i_id INT NOT NULL,
    s_w_id INT NOT NULL,
    s_quantity SMALLINT,
    s_dist_01 CHAR(24), s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24),
    s_dist_05 CHAR(24), s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24),
    s_dist_09 CHAR(24), s_dist_10 CHAR(24),
    s_ytd DECIMAL(8,0),
    s_order_cnt SMALLINT,
    s_remote_cnt SMALLINT,
    s_data VARCHAR(50),
    PRIMARY KEY (s_w_id, s_i_id)
);
CREATE INDEX stock_i_id ON stock (s_i_id);
